"""An evaluation's tasks: SWE-bench's instances, with golem's own fields beside them.

A task file is JSON Lines (one task per line; a JSON array is read too). Its fields are
SWE-bench's where they apply (``instance_id``, ``repo``, ``base_commit``, ``patch`` (the
gold patch), ``test_patch`` (the hidden tests), ``problem_statement``, ``FAIL_TO_PASS``,
``PASS_TO_PASS``, ``created_at``, ``version``, ``environment_setup_commit``,
``hints_text``) and golem's own under the ``golem_`` prefix; any other field is kept as it
is, so a team's own notes survive ``golem eval`` reading and writing the file.

Files from elsewhere are read the same way: SWE-bench (Lite, Verified: the lists may be
JSON-encoded strings), SWE-bench Pro (``fail_to_pass``, ``pass_to_pass``, its
``requirements`` and ``interface`` joined to the problem statement) and Multi-SWE-bench
(``org``/``repo``/``number``, ``base.sha``, ``fix_patch``, the ``f2p``/``s2p``/``n2p`` and
``p2p`` test maps, ``resolved_issues``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from golem.core.errors import TaskFileError

__all__ = ["EvalTask", "from_record", "read_tasks", "write_tasks"]

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,199}$")
"""An instance id: it names the task's directory of results (no slash, no ``..``)."""
COMMIT = re.compile(r"^[0-9a-f]{7,64}$")


class EvalTask(BaseModel):
    """One task: a repository at a commit, what to do, and the hidden tests that judge it."""

    model_config = ConfigDict(extra="allow")

    instance_id: str = Field(description="Unique in its file; names the task's results.")
    repo: str = Field(description="owner/name on its forge, or the repository's URL or path.")
    base_commit: str = Field(description="The commit the agent starts from.")
    patch: str = Field("", description="The gold patch: the upstream fix's source changes.")
    test_patch: str = Field(description="The hidden tests, applied only after the agent.")
    problem_statement: str = Field(description="What the agent is asked to do.")
    FAIL_TO_PASS: list[str] = Field(description="Tests that fail before the fix, pass after.")
    PASS_TO_PASS: list[str] = Field(default_factory=list, description="Tests that must pass.")
    created_at: str = ""
    version: str = ""
    environment_setup_commit: str = ""
    hints_text: str = ""
    golem_remote: str | None = Field(
        None, description="Where to clone the repository from; None: repo on GitHub."
    )
    golem_test_commands: list[str] = Field(
        default_factory=list,
        description="The commands the hidden tests are run by; empty: the repository's "
        "test commands as golem detects them at the base commit.",
    )
    golem_must_pass: list[str] = Field(
        default_factory=list,
        description="Of those, the commands whose output names no passing test, and that "
        "passed whole with the gold patch: they must pass whole.",
    )
    golem_source: str = Field("", description="The change the task was made from.")

    @field_validator("instance_id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not SAFE_ID.match(value) or ".." in value:
            raise ValueError(
                f"{value!r} is not an instance id golem can name a directory by: letters, "
                "digits, '_', '.', '+' and '-' (no '/' nor '..')"
            )
        return value

    @field_validator("base_commit")
    @classmethod
    def _commit(cls, value: str) -> str:
        if not COMMIT.match(value):
            raise ValueError(f"{value!r} is not a commit id (7 to 64 lower-case hex digits)")
        return value

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        if isinstance(value, str):  # SWE-bench's datasets keep the lists JSON-encoded
            try:
                return json.loads(value) if value.strip() else []
            except ValueError as exc:
                raise ValueError(f"not a JSON list of test names: {exc}") from None
        return value

    @field_validator("FAIL_TO_PASS")
    @classmethod
    def _something_to_fail(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("a task needs at least one test that fails before its fix")
        return value


def read_tasks(path: Path) -> list[EvalTask]:
    """The tasks of a file (JSONL, or a JSON array), each line checked; a TaskFileError
    names the file, line and field of the first problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"cannot read the task file {path}: {exc}") from exc
    tasks: list[EvalTask] = []
    seen: dict[str, int] = {}
    for line, record in _records(path, text):
        try:
            task = from_record(record)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "the task"
            raise TaskFileError(f"{path}:{line}: {where}: {error['msg']}") from None
        except TaskFileError as exc:
            raise TaskFileError(f"{path}:{line}: {exc.message}") from None
        if task.instance_id in seen:
            raise TaskFileError(
                f"{path}:{line}: instance_id {task.instance_id!r} is the task of line "
                f"{seen[task.instance_id]} too: each task needs its own"
            )
        seen[task.instance_id] = line
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{path} holds no task: make some with `golem eval make`")
    return tasks


def write_tasks(path: Path, tasks: Iterable[EvalTask]) -> None:
    """Write ``tasks`` as JSON Lines (replacing the file whole, never half written)."""
    lines = "".join(task.model_dump_json() + "\n" for task in tasks)
    scratch = path.with_name(f".{path.name}.writing")
    scratch.write_text(lines, encoding="utf-8")
    scratch.replace(path)


def _records(path: Path, text: str) -> list[tuple[int, Any]]:
    """(line, record) of a JSONL file, or of a JSON array (line 1 for each)."""
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise TaskFileError(f"{path}: not a JSON array: {exc}") from None
        return [(1, item) for item in items]
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except ValueError as exc:
            raise TaskFileError(f"{path}:{number}: not a JSON object: {exc}") from None
    return records


def from_record(record: Any) -> EvalTask:
    """A task from a record of golem's, SWE-bench's, SWE-bench Pro's or Multi-SWE-bench's."""
    if not isinstance(record, dict):
        raise TaskFileError("a task is a JSON object")
    if "fix_patch" in record or "f2p_tests" in record:
        return EvalTask.model_validate(_multi_swe(record))
    if "fail_to_pass" in record and "FAIL_TO_PASS" not in record:
        return EvalTask.model_validate(_pro(record))
    return EvalTask.model_validate(record)


def _pro(record: dict[str, Any]) -> dict[str, Any]:
    """SWE-bench Pro's names: lower-case test lists; its requirements and interface are
    part of what the agent is told."""
    data = {k: v for k, v in record.items() if k not in ("fail_to_pass", "pass_to_pass")}
    data["FAIL_TO_PASS"] = record.get("fail_to_pass")
    data["PASS_TO_PASS"] = record.get("pass_to_pass") or []
    parts = [str(record.get("problem_statement") or "")]
    for name in ("requirements", "interface"):
        if record.get(name):
            parts.append(f"{name.capitalize()}:\n{record[name]}")
    data["problem_statement"] = "\n\n".join(part for part in parts if part)
    return data


def _multi_swe(record: dict[str, Any]) -> dict[str, Any]:
    """Multi-SWE-bench's names: org/repo/number, base.sha, fix_patch, the test maps."""
    known = (
        "org",
        "number",
        "base",
        "fix_patch",
        "f2p_tests",
        "s2p_tests",
        "n2p_tests",
        "p2p_tests",
        "resolved_issues",
        "title",
        "body",
    )
    data = {k: v for k, v in record.items() if k not in known}
    org, name, number = record.get("org"), record.get("repo"), record.get("number")
    base = record["base"] if isinstance(record.get("base"), dict) else {}
    data.update(
        repo=f"{org}/{name}" if org else name,
        instance_id=record.get("instance_id") or f"{org}__{name}-{number}",
        base_commit=base.get("sha"),
        patch=record.get("fix_patch") or "",
        FAIL_TO_PASS=[
            t for key in ("f2p_tests", "s2p_tests", "n2p_tests") for t in record.get(key) or {}
        ],
        PASS_TO_PASS=list(record.get("p2p_tests") or {}),
        problem_statement=_issues_text(record),
    )
    return data


def _issues_text(record: dict[str, Any]) -> str:
    issues = [i for i in record.get("resolved_issues") or [] if isinstance(i, dict)]
    parts = [f"{i.get('title') or ''}\n\n{i.get('body') or ''}".strip() for i in issues]
    parts = [part for part in parts if part]
    if not parts:
        parts = [f"{record.get('title') or ''}\n\n{record.get('body') or ''}".strip()]
    return "\n\n".join(parts)
