"""A repository's flaky checks: the tests (or, where none were parsed, the whole checks) that
failed and then passed when run again, kept per repository so that a later failure of the
same test is run again, and nothing else is.

JSON under ``<state_dir>/cache/flaky/``, one file per tenant and repository, written
atomically; an unreadable file is no history.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from golem.blueprint.execution import Execution
from golem.checks import CheckResult

__all__ = ["flaky_before", "record_flaky"]

MAX_TESTS = 500
"""Flaky tests kept per check command (the newest)."""
WHOLE = "*"
"""The name that stands for a check whose output named no test."""


def flaky_before(ex: Execution, result: CheckResult) -> list[str]:
    """The failing tests of ``result`` seen flaky before (``WHOLE`` for a check whose output
    names no test, seen flaky as a whole)."""
    known = set(_load(_file(ex)).get(result.command, []))
    if not result.failures:
        return [WHOLE] if WHOLE in known else []
    return [failure.name for failure in result.failures if failure.name in known]


def record_flaky(ex: Execution, failed: CheckResult) -> None:
    """Remember that ``failed``'s tests (or the check itself) passed when run again."""
    path = _file(ex)
    data = _load(path)
    names = [failure.name for failure in failed.failures] or [WHOLE]
    kept = [name for name in data.get(failed.command, []) if name not in names]
    data[failed.command] = [*kept, *names][-MAX_TESTS:]
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".flaky-")
    with os.fdopen(handle, "w") as out:
        json.dump(data, out)
    os.replace(scratch, path)


def _file(ex: Execution) -> Path:
    parts = {"tenant": ex.book.store.tenant or "", "repo": ex.state.request.repo}
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return ex.config.state_dir / "cache" / "flaky" / f"{key}.json"


def _load(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(command): [str(name) for name in names]
        for command, names in data.items()
        if isinstance(names, list)
    }
