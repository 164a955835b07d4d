"""What a repository's checks did before, kept on the host between runs: their results on
a base commit (the baseline cache), and the tests seen flaky.

The baseline: results per repository, base commit, installed dependencies, image, setup
commands and environment (``baseline_key``), one JSON file per base under
``<state_dir>/cache/baseline/``. Flaky checks: the tests (or, where none were parsed, the
whole checks) that failed and then passed when run again, one JSON file per tenant and
repository under ``<state_dir>/cache/flaky/``, so that a later failure of the same test is
run again, and nothing else is. Files are written atomically; an unreadable one is no
history.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from golem.checks.contracts import CheckResult

__all__ = [
    "WHOLE",
    "baseline_key",
    "flaky_before",
    "flaky_file",
    "load_baseline",
    "record_flaky",
    "store_baseline",
]

MAX_TESTS = 500
"""Flaky tests kept per check command (the newest)."""
WHOLE = "*"
"""The name that stands for a check whose output named no test."""


def baseline_key(parts: Mapping[str, object]) -> str:
    """The key a base's results are kept under: a hash of what makes them what they are."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def load_baseline(state_dir: Path, key: str) -> list[CheckResult]:
    """The results kept for the base ``key`` (none when none are, or they are unreadable:
    the checks run again when needed)."""
    try:
        data = json.loads(_baseline_file(state_dir, key).read_text())
        return [CheckResult.model_validate(item) for item in data["results"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def store_baseline(state_dir: Path, key: str, result: CheckResult) -> None:
    """Keep ``result`` for the base ``key``, in place of the same check's earlier one."""
    kept = [
        r
        for r in load_baseline(state_dir, key)
        if (r.name, r.command) != (result.name, result.command)
    ]
    text = json.dumps({"results": [r.model_dump(mode="json") for r in [*kept, result]]})
    _write(_baseline_file(state_dir, key), text, prefix=".baseline-")


def flaky_file(state_dir: Path, tenant: str, repo: str) -> Path:
    """Where the flaky tests of ``tenant``'s ``repo`` are kept."""
    key = baseline_key({"tenant": tenant, "repo": repo})
    return state_dir / "cache" / "flaky" / f"{key}.json"


def flaky_before(path: Path, result: CheckResult) -> list[str]:
    """The failing tests of ``result`` seen flaky before (``WHOLE`` for a check whose output
    names no test, seen flaky as a whole)."""
    known = set(_load_flaky(path).get(result.command, []))
    if not result.failures:
        return [WHOLE] if WHOLE in known else []
    return [failure.name for failure in result.failures if failure.name in known]


def record_flaky(path: Path, failed: CheckResult) -> None:
    """Remember that ``failed``'s tests (or the check itself) passed when run again."""
    data = _load_flaky(path)
    names = [failure.name for failure in failed.failures] or [WHOLE]
    kept = [name for name in data.get(failed.command, []) if name not in names]
    data[failed.command] = [*kept, *names][-MAX_TESTS:]
    _write(path, json.dumps(data), prefix=".flaky-")


def _baseline_file(state_dir: Path, key: str) -> Path:
    return state_dir / "cache" / "baseline" / f"{key}.json"


def _load_flaky(path: Path) -> dict[str, list[str]]:
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


def _write(path: Path, text: str, *, prefix: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=prefix)
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(scratch, path)
