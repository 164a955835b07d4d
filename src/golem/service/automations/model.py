"""An automation as the store keeps it: its definition (from golem.toml or the API) and
what it did: the runs it started, the firings it skipped and why, and where its schedule
stands."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from golem.core.automation_config import AutomationConfig

__all__ = ["KIND", "Automation", "AutomationView", "Fired", "Firing", "Skipped"]

KIND = "automation"
KEPT = 20  # runs and skips remembered per automation


class Firing(BaseModel):
    """A firing in progress: kept before its run is made, so that a server that dies
    between the two leaves it for the next to finish (with the same once-only key)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    at: float
    fields: dict[str, str] = Field(default_factory=dict)
    how: str = Field(description="What fired it: schedule, webhook, event, manual.")


class Fired(BaseModel):
    """A run the automation started."""

    model_config = ConfigDict(extra="forbid")

    key: str
    run_id: str
    at: float
    how: str


class Skipped(BaseModel):
    """A firing that started nothing, and why (a run still in progress, a missed slot)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    at: float
    why: str


class Automation(BaseModel):
    """An automation and its record."""

    model_config = ConfigDict(extra="forbid")

    definition: AutomationConfig
    origin: Literal["config", "api"]
    seen: float = Field(
        default_factory=time.time,
        description="When the store first had it: its schedule's slots count from then.",
    )
    last_slot: float | None = Field(None, description="The last slot fired or skipped.")
    firing: Firing | None = None
    fired: list[Fired] = Field(default_factory=list, description="Newest last.")
    skipped: list[Skipped] = Field(default_factory=list, description="Newest last.")

    def ran(self, fired: Fired) -> None:
        """Note a run it started."""
        self.fired = [*self.fired, fired][-KEPT:]

    def skip(self, skipped: Skipped) -> None:
        """Note a firing that started nothing."""
        self.skipped = [*self.skipped, skipped][-KEPT:]

    @property
    def last(self) -> Fired | None:
        """The last run it started."""
        return self.fired[-1] if self.fired else None


class AutomationView(BaseModel):
    """An automation as the API shows it: its definition, its last run (and how that
    run stands) and its next one."""

    model_config = ConfigDict(extra="forbid")

    name: str
    tenant: str
    origin: Literal["config", "api"]
    definition: AutomationConfig
    last_run: Fired | None
    last_run_status: str | None = None
    next_run: float | None = Field(None, description="Its next slot (a schedule's), epoch.")
    skipped: list[Skipped]
    fired: list[Fired]
