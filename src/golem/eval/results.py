"""An evaluation's results directory: its settings, then one file per attempt written whole
as the attempt finishes, so an interrupted evaluation resumes where it stopped and never
runs a finished attempt again::

    OUT/settings.json                       what was evaluated, how, by which golem
    OUT/attempts/<instance_id>/<k>.json     attempt k of a task (resolved or not, or not run)
    OUT/report.json, OUT/report.html        written by `golem eval run` and `golem eval report`

An attempt that was not run (its repository or environment could not be had) is kept with
why, and tried again by the next ``golem eval run`` of the directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from golem.core.errors import EvalError
from golem.eval.judge import Score

__all__ = ["Attempt", "EvalSettings", "ResultsDir", "Verdict", "verdict_of"]

Verdict = Literal["verified", "escalated", "unverified", "failed"]
"""What golem's own verification said of a run: ``verified`` (it succeeded: its checks
passed), ``escalated`` (handed to a person), ``unverified`` (no check could tell),
``failed`` (it could not go on)."""


def verdict_of(status: str) -> Verdict:
    """A run's final status as a verdict."""
    verdicts: dict[str, Verdict] = {
        "succeeded": "verified",
        "escalated": "escalated",
        "unverified": "unverified",
    }
    return verdicts.get(status, "failed")


class EvalSettings(BaseModel):
    """What an evaluation runs: a resumed one must run the same."""

    tasks: str = Field(description="The task file, as given.")
    tasks_sha256: str
    model: str
    blueprint: str
    attempts: int
    budget_usd: float | None
    golem_version: str
    label: str = Field("", description="How reports name it (default: model, blueprint).")
    started: float = Field(default_factory=time.time)

    def differences(self, other: EvalSettings) -> list[str]:
        """The settings (but when it started, and its label) that differ from ``other``."""
        fields = ("tasks_sha256", "model", "blueprint", "attempts", "budget_usd", "golem_version")
        return [
            f"{name} {getattr(self, name)!r} (now {getattr(other, name)!r})"
            for name in fields
            if getattr(self, name) != getattr(other, name)
        ]


class Attempt(BaseModel):
    """One run of golem on one task, judged by the hidden tests."""

    instance_id: str
    attempt: int
    not_run: str | None = Field(None, description="Why it was not run (then nothing else).")
    run_id: str | None = None
    status: str = Field("", description="The run's final status.")
    verdict: Verdict | None = None
    resolved: bool | None = None
    score: Score | None = None
    error: str | None = Field(None, description="The run's error, when it failed.")
    cost_usd: float = 0.0
    turns: int = 0
    seconds: float = Field(0.0, description="The run's wall time.")
    nodes: dict[str, float] = Field(
        default_factory=dict, description="Seconds each node took (a node run twice: both)."
    )
    rounds: int = 0
    tests_seconds: float = Field(0.0, description="The hidden tests' run.")
    patch: str = Field("", description="What the agent changed: its tree against the base.")
    tests_run: str | None = Field(None, description="The hidden tests' run id.")
    ended: float = Field(default_factory=time.time)


class ResultsDir:
    """The results directory at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def digest(file: Path) -> str:
        """The SHA-256 of a task file (a resumed evaluation runs the same tasks)."""
        return hashlib.sha256(file.read_bytes()).hexdigest()

    def begin(self, settings: EvalSettings) -> EvalSettings:
        """Start, or resume with the same settings (else an EvalError naming the ones
        that differ); the settings in force."""
        known = self.settings()
        if known is not None:
            differ = known.differences(settings)
            if differ:
                raise EvalError(
                    f"{self.path} holds an evaluation made with other settings: "
                    f"{'; '.join(differ)}. Resume it with the same ones, or give another --out"
                )
            return known
        self.path.mkdir(parents=True, exist_ok=True)
        _write(self.path / "settings.json", settings.model_dump_json(indent=2))
        return settings

    def settings(self) -> EvalSettings | None:
        """The settings it was made with, or None when it is new."""
        file = self.path / "settings.json"
        if not file.exists():
            return None
        try:
            return EvalSettings.model_validate_json(file.read_text())
        except (OSError, ValidationError) as exc:
            raise EvalError(f"{file} cannot be read ({_why(exc)}); remove the directory") from exc

    def attempts(self) -> list[Attempt]:
        """Every attempt recorded, by task and number."""
        found = []
        root = self.path / "attempts"
        for file in sorted(root.glob("*/*.json")) if root.is_dir() else []:
            try:
                found.append(Attempt.model_validate_json(file.read_text()))
            except (OSError, ValidationError) as exc:
                raise EvalError(
                    f"{file} cannot be read ({_why(exc)}); remove it to run it again"
                ) from exc
        return sorted(found, key=lambda a: (a.instance_id, a.attempt))

    def finished(self, instance_id: str, attempt: int) -> bool:
        """Whether attempt ``attempt`` of the task was run to its end (one not run is not)."""
        file = self._file(instance_id, attempt)
        if not file.exists():
            return False
        try:
            return Attempt.model_validate_json(file.read_text()).not_run is None
        except (OSError, ValidationError):
            return False

    def keep(self, attempt: Attempt) -> None:
        """Record an attempt, whole or not at all."""
        file = self._file(attempt.instance_id, attempt.attempt)
        file.parent.mkdir(parents=True, exist_ok=True)
        _write(file, attempt.model_dump_json(indent=2))

    def work(self, instance_id: str, attempt: int) -> Path:
        """A scratch directory of the attempt's (emptied when it begins)."""
        return self.path / "work" / instance_id / str(attempt)

    def _file(self, instance_id: str, attempt: int) -> Path:
        return self.path / "attempts" / instance_id / f"{attempt}.json"


def _why(exc: OSError | ValidationError) -> str:
    if isinstance(exc, ValidationError):
        return exc.errors()[0]["msg"]
    return exc.strerror or str(exc)


def _write(file: Path, text: str) -> None:
    handle, scratch = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(scratch, file)
    except BaseException:
        os.unlink(scratch)
        raise


def dump(value: object) -> str:
    """JSON for a report (sorted keys, indented)."""
    return json.dumps(value, indent=2, sort_keys=True)
