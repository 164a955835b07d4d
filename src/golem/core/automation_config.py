"""Automations (``[[automations]]`` in golem.toml, and the API's ``/v1/automations``): runs
golem starts by itself, on a cron schedule in a time zone, on a delivery to the
automation's own webhook, or on an event of a forge (a failed GitHub Actions run or GitLab
pipeline on the default branch, a push to the default branch). Each names the repository,
blueprint, task template and budget of the runs it starts."""

from __future__ import annotations

import re
import string
import zoneinfo
from datetime import UTC, datetime
from typing import Literal

from cronsim import CronSim, CronSimError
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AUTOMATION_NAME",
    "EVENT_FIELDS",
    "AutomationConfig",
    "AutomationEvent",
    "template_fields",
]

AUTOMATION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
AutomationEvent = Literal[
    "github.workflow_run.failed", "gitlab.pipeline.failed", "github.push", "gitlab.push"
]
SCHEDULE_FIELDS = frozenset({"automation", "time", "date"})
WEBHOOK_FIELDS = frozenset({"automation", "time", "date", "payload"})
_COMMON = ("automation", "time", "date", "repo", "branch", "sha", "url")
EVENT_FIELDS: dict[str, frozenset[str]] = {
    "github.workflow_run.failed": frozenset((*_COMMON, "workflow", "conclusion", "run_id")),
    "gitlab.pipeline.failed": frozenset((*_COMMON, "pipeline_id", "status")),
    "github.push": frozenset((*_COMMON, "before", "pusher")),
    "gitlab.push": frozenset((*_COMMON, "before", "pusher")),
}
"""The fields a task template may name, per event."""


def template_fields(template: str) -> list[str]:
    """The names ``template`` takes (``{name}``); ValueError for anything else a format
    string can do (``{a.b}``, ``{a[0]}``, ``{a!r}``, ``{a:>10}``, a positional ``{}``)."""
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"the task template is not a template: {exc} (write {{{{ for a brace)"
        ) from exc
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name) or spec or conversion:
            raise ValueError(
                f"the task template's field {{{name}}} is not a plain name: write {{name}} "
                "(letters, digits, _), without attributes, indexes, conversions or formats"
            )
        names.append(name)
    return names


class AutomationConfig(BaseModel):
    """One automation: what starts it (exactly one of ``cron``, ``webhook``, ``event``),
    and the run it starts."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Its name: 1-63 lowercase letters, digits, - and _.")
    tenant: str = Field("default", description="The tenant its runs belong to.")
    repo: str | None = Field(
        None,
        description="The repository of its runs (a git URL or, with server_files, a path); "
        "an event's automation may leave it out: the event's repository then, cloned as "
        "[server.github] (or gitlab) repo_url says.",
    )
    blueprint: str = Field("minion", description="The blueprint of its runs.")
    task: str = Field(
        min_length=1,
        max_length=20_000,
        description="The task, a template: {automation}, {time}, {date}; a webhook's "
        "{payload} and the top-level fields of its JSON body; an event's fields (docs/"
        "automations.md).",
    )
    budget_usd: float | None = Field(None, gt=0, description="Dollars one run may spend.")
    model: str | None = Field(None, description="The runs' model; default: [models] default.")
    forge: Literal["github", "gitlab", "local"] | None = Field(
        None, description="Where the runs' pull requests go; default: [forge] provider."
    )
    base: str | None = Field(None, description="The base branch; default: the remote's.")
    enabled: bool = Field(True, description="A disabled automation starts nothing.")
    cron: str | None = Field(
        None, description="A cron schedule (5 fields: minute hour day month weekday)."
    )
    timezone: str = Field("UTC", description="The time zone the schedule is read in (IANA).")
    webhook: bool = Field(
        False,
        description="Started by a signed POST to /v1/automations/<name>/webhook, once per "
        "Idempotency-Key.",
    )
    secret_env: str | None = Field(
        None, description="The variable holding the webhook's secret (HMAC-SHA256 of the body)."
    )
    event: AutomationEvent | None = Field(
        None,
        description="Started by a forge's event through its webhook: a failed GitHub "
        "Actions run (github.workflow_run.failed) or GitLab pipeline "
        "(gitlab.pipeline.failed) on the repository's default branch, or a push to it "
        "(github.push, gitlab.push: with blueprint = 'prepare', the repository's prepared "
        "snapshot is refreshed).",
    )
    watch: str | None = Field(
        None,
        description="The repository whose events start it: owner/name (GitHub), "
        "group/project (GitLab).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not AUTOMATION_NAME.match(name):
            raise ValueError(
                f"automation name {name!r}: use 1-63 lowercase letters, digits, - and _"
            )
        return name

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, tenant: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", tenant):
            raise ValueError(f"tenant {tenant!r}: use 1-64 letters, digits, '-', '_' or '.'")
        return tenant

    @field_validator("timezone")
    @classmethod
    def _zone(cls, timezone: str) -> str:
        zone(timezone)
        return timezone

    @field_validator("cron")
    @classmethod
    def _cron(cls, cron: str | None) -> str | None:
        if cron is not None:
            try:
                next(CronSim(cron, datetime.now(UTC)))
            except (CronSimError, StopIteration) as exc:
                raise ValueError(f"cron {cron!r} is not a schedule: {exc}") from exc
        return cron

    @model_validator(mode="after")
    def _one_start(self) -> AutomationConfig:
        starts = [self.cron is not None, self.webhook, self.event is not None]
        if starts.count(True) != 1:
            raise ValueError(
                f"automation {self.name!r}: give exactly one of cron, webhook = true or event"
            )
        if self.webhook and not self.secret_env:
            raise ValueError(
                f"automation {self.name!r}: a webhook needs secret_env, the variable holding "
                "its secret"
            )
        if self.event is not None and not self.watch:
            raise ValueError(
                f"automation {self.name!r}: an event needs watch, the repository whose "
                "events start it"
            )
        if self.repo is None and self.event is None:
            raise ValueError(f"automation {self.name!r}: name the repo its runs work on")
        unknown = sorted(set(template_fields(self.task)) - self.fields())
        if unknown and not self.webhook:
            raise ValueError(
                f"automation {self.name!r}: its task names {', '.join(unknown)}, which it does "
                f"not have: it has {', '.join(sorted(self.fields()))}"
            )
        return self

    def fields(self) -> frozenset[str]:
        """The fields its task template may name (a webhook's also any of its body's)."""
        if self.event is not None:
            return EVENT_FIELDS[self.event]
        return WEBHOOK_FIELDS if self.webhook else SCHEDULE_FIELDS


def zone(name: str) -> zoneinfo.ZoneInfo:
    """The time zone ``name`` (ValueError naming it when there is none)."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(
            f"time zone {name!r} is not known: use an IANA name (Europe/Berlin)"
        ) from exc
