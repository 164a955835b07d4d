"""Box records in the state directory: who owns each box, so orphans can be found and pruned.

A record is written before a box starts and removed after it is gone. A box whose owner
process is dead (pid gone, or reused by another process) is an orphan.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from golem.core.isolation import Isolation

__all__ = ["BoxRecord", "BoxRegistry", "process_start_time"]


def process_start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


def _process_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[0]


def process_alive(pid: int, start_time: int | None) -> bool:
    """True while ``pid`` is the same process that had ``start_time`` (zombies are dead)."""
    current = process_start_time(pid)
    if current is None or (start_time is not None and current != start_time):
        return False
    return _process_state(pid) not in (None, "Z", "X")


class BoxRecord(BaseModel):
    """A box's label: id, backend, owner, creation time, and the backend's own state."""

    id: str
    backend: str
    owner_pid: int
    owner_start: int | None
    created: float = Field(default_factory=time.time)
    image: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    isolation: Isolation | None = Field(None, description="What isolation the box got.")
    state: dict[str, Any] = Field(default_factory=dict)

    @property
    def owner_alive(self) -> bool:
        """Whether the process that made this box still runs."""
        return process_alive(self.owner_pid, self.owner_start)


class BoxRegistry:
    """Reads and writes box records under ``<state_dir>/boxes``."""

    def __init__(self, state_dir: Path) -> None:
        self.directory = state_dir / "boxes"

    def new_record(self, box_id: str, backend: str, **fields: Any) -> BoxRecord:
        """A record owned by this process."""
        pid = os.getpid()
        return BoxRecord(
            id=box_id,
            backend=backend,
            owner_pid=pid,
            owner_start=process_start_time(pid),
            **fields,
        )

    def save(self, record: BoxRecord) -> None:
        """Write (or rewrite) a record atomically."""
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = self.directory / f"{record.id}.json"
        temporary = target.with_suffix(".tmp")
        temporary.write_text(record.model_dump_json())
        temporary.replace(target)

    def remove(self, box_id: str) -> None:
        """Forget a box."""
        with contextlib.suppress(FileNotFoundError):
            (self.directory / f"{box_id}.json").unlink()

    def load(self, box_id: str) -> BoxRecord | None:
        """One record, or None."""
        path = self.directory / f"{box_id}.json"
        try:
            return BoxRecord.model_validate_json(path.read_text())
        except (OSError, ValidationError, json.JSONDecodeError):
            return None

    def all(self) -> list[BoxRecord]:
        """Every readable record, oldest first."""
        if not self.directory.is_dir():
            return []
        records = []
        for path in self.directory.glob("*.json"):
            record = self.load(path.stem)
            if record is not None:
                records.append(record)
        return sorted(records, key=lambda r: r.created)
