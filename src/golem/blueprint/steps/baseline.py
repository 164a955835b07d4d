"""The baseline: a loop's checks run on the base commit, before the agent changes anything,
so that the loop can tell what already failed from what the change broke.

Results are cached per repository, base commit, installed dependencies, image and commands
(JSON under ``<state_dir>/cache/baseline/``); a run of the same base reuses them. A check
that changes the tree here has its changes undone: the agent starts from the base.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.model import BoxNode, LoopNode
from golem.blueprint.steps.checks import commands_of, run_check
from golem.blueprint.steps.tree import fingerprint, restore
from golem.forge import CheckResult

__all__ = ["already_failing", "cache_paths", "run_baseline"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_DIGITS = re.compile(r"\d+")


async def run_baseline(ex: Execution, node: BoxNode) -> tuple[Literal["success"], str]:
    """Run (or reuse) the baseline of the loop ``node.baseline`` names."""
    assert node.baseline is not None
    loop = ex.blueprint.node(node.baseline)
    assert isinstance(loop, LoopNode)
    state = ex.state
    if state.baseline is not None:  # a resumed run: it ran before the runner died
        return "success", _summary(state.baseline, "kept")
    pairs = commands_of(ex, loop.checks)
    if not pairs:
        state.baseline = []
        return "success", "no check to run"
    key = await _key(ex, pairs)
    cached = _load(ex, key)
    if cached is not None:
        state.baseline = cached
        ex.save()
        ex.note(f"baseline: reused the cached results of this base ({key[:12]})", node.id)
        return "success", _summary(cached, "cached")
    box = await ex.box()
    exclude = cache_paths(ex)
    before = await fingerprint(box, exclude=exclude)
    results = [await run_check(ex, node.id, name, command) for name, command in pairs]
    if await fingerprint(box, exclude=exclude) != before:
        undone = await restore(box, before, exclude=exclude)
        ex.note(f"baseline: the checks changed {', '.join(undone)}; undone", node.id)
    state.baseline = results
    ex.save()
    if not any(result.timed_out for result in results):  # a timeout may not come again
        _store(ex, key, results)
    return "success", _summary(results, "ran")


def already_failing(result: CheckResult, baseline: list[CheckResult] | None) -> bool:
    """Whether a failed check failed the same way on the base commit: the same command
    failed there and nothing in its failure is new. Where failing tests were parsed, each
    one (by name and message) failed there too; otherwise every line of its output is in
    the base's output, numbers and addresses aside (line numbers shift, counts and
    timings change). A test the change made fail differently is the change's to fix."""
    before = next(
        (b for b in baseline or [] if (b.name, b.command) == (result.name, result.command)),
        None,
    )
    if before is None or before.passed or before.timed_out or result.timed_out:
        return False
    if result.failures and before.failures:
        known = {(f.name, _normal(f.message, digits=False)) for f in before.failures}
        return all((f.name, _normal(f.message, digits=False)) in known for f in result.failures)
    if result.exit_code != before.exit_code:
        return False
    seen = _normal(before.output_tail)
    lines = _normal(result.output_tail).splitlines()
    return all(line in seen for line in lines)


def _normal(text: str, *, digits: bool = True) -> str:
    text = _HEX.sub("0x#", _ANSI.sub("", text))
    if digits:
        text = _DIGITS.sub("#", text)
    return "\n".join(" ".join(line.split()) for line in text.splitlines())


def _summary(results: list[CheckResult], how: str) -> str:
    failing = [r.name for r in results if not r.passed]
    fails = f"; failing on the base: {', '.join(failing)}" if failing else ""
    return f"{len(results)} check(s) {how}{fails}"


def cache_paths(ex: Execution) -> list[str]:
    """What the dependency install made in the tree: never part of a change."""
    conventions = ex.state.conventions
    return list(conventions.cache) if conventions is not None else []


async def _key(ex: Execution, pairs: list[tuple[str, str]]) -> str:
    state = ex.state
    conventions = state.conventions
    box = await ex.box()
    parts = {
        "repo": state.request.repo,
        "base": await ex.repo().head(),
        "dependencies": state.dependencies,
        "image": box.spec.image,
        "setup": conventions.setup if conventions is not None else [],
        "env": conventions.env if conventions is not None else {},
        "checks": pairs,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _directory(ex: Execution) -> Path:
    return ex.config.state_dir / "cache" / "baseline"


def _load(ex: Execution, key: str) -> list[CheckResult] | None:
    try:
        data = json.loads((_directory(ex) / f"{key}.json").read_text())
        return [CheckResult.model_validate(item) for item in data["results"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none yet, or unreadable: the baseline runs again


def _store(ex: Execution, key: str, results: list[CheckResult]) -> None:
    directory = _directory(ex)
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"results": [r.model_dump(mode="json") for r in results]})
    handle, scratch = tempfile.mkstemp(dir=directory, prefix=".baseline-")
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(scratch, directory / f"{key}.json")
