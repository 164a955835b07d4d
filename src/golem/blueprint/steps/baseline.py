"""The baseline: a loop's checks on the base commit, so that the loop can tell what already
failed from what the change broke.

Its node records the box's working tree before the agent changes anything (a git tree id,
see ``tree``), and takes what the cache knows of this base. A check that fails in the loop
and has no baseline yet is then run on that tree: the box's tree is put back to the base,
the check runs, and the tree is put back to the change. A change whose checks pass never
pays for a baseline. Results are cached per repository, base commit, installed
dependencies, image, setup commands and environment (JSON under
``<state_dir>/cache/baseline/``, one file per base, written atomically).
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
from golem.blueprint.model import BoxNode
from golem.blueprint.steps.checks import run_check
from golem.checks import CheckResult, fingerprint, restore
from golem.core.ansi import plain
from golem.core.errors import SandboxError

__all__ = ["already_failing", "base_result", "cache_paths", "normal", "run_baseline"]

_HEX = re.compile(r"0x[0-9a-fA-F]{4,}")
_MOVING = (  # what moves between two runs of the same failure; values in messages do not
    re.compile(r"(?<=\S)(?::\d+)+(?=:|\)|\s|$)"),  # path:LINE:COL positions
    re.compile(r"(?<=\bline )\d+", re.I),  # "line 12"
    re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|minutes?)\b"),  # durations
    re.compile(r"(?<=\[)\s*\d+(?=%\])"),  # progress: "[ 50%]"
)
_SUMMARY = re.compile(  # a summary line's counts ("Ran 12 tests", "3 failed, 9 passed")
    r"^(?:ran \d+ tests?\b|.*\b\d+ (?:passed|failed|errors?|skipped|tests?|warnings?)\b)",
    re.I,
)
_NUMBER = re.compile(r"\d+")


async def run_baseline(ex: Execution, node: BoxNode) -> tuple[Literal["success"], str]:
    """Record the tree before any change, and what the cache knows of this base."""
    state = ex.state
    if state.base_tree is None:  # a resumed run keeps the one it recorded
        state.base_tree = await fingerprint(await ex.box(), exclude=cache_paths(ex))
    cached = _load(ex, await _key(ex))
    known = {(r.name, r.command) for r in state.baseline or []}
    state.baseline = [
        *(state.baseline or []),
        *(r for r in cached if (r.name, r.command) not in known),
    ]
    ex.save()
    if cached:
        ex.note(
            f"baseline: {len(cached)} check result(s) of this base reused from the cache", node.id
        )
    return "success", f"base tree {state.base_tree[:12]}; {len(state.baseline)} result(s) known"


async def base_result(
    ex: Execution, loop: str, name: str, command: str, *, tree: str
) -> CheckResult | None:
    """The check's result on the base commit: known, or run now on the base tree (the
    box's tree, ``tree``, put back after); None when there is no base tree to run it on."""
    state = ex.state
    known = next((r for r in state.baseline or [] if (r.name, r.command) == (name, command)), None)
    if known is not None or state.base_tree is None:
        return known
    node = _baseline_node(ex, loop)
    box = await ex.box()
    exclude = cache_paths(ex)
    try:
        await restore(box, state.base_tree, exclude=exclude)
    except SandboxError as exc:  # a resumed run's new box lacks the base tree's objects
        ex.note(
            f"baseline: cannot go back to the base tree ({exc.message}); "
            "failures are not compared with the base",
            node,
        )
        state.base_tree = None
        return None
    try:
        result = await run_check(ex, node, name, command)
    finally:
        await restore(box, tree, exclude=exclude)
    state.baseline = [*(state.baseline or []), result]
    ex.save()
    if not result.timed_out:  # a timeout may not come again
        _store(ex, await _key(ex), result)
    return result


def _baseline_node(ex: Execution, loop: str) -> str:
    """The id of the node that takes the loop's baseline (its events carry it)."""
    return next(
        (n.id for n in ex.blueprint.nodes if isinstance(n, BoxNode) and n.baseline == loop),
        loop,
    )


def already_failing(result: CheckResult, baseline: list[CheckResult] | None) -> bool:
    """Whether a failed check failed the same way on the base commit: the same command
    failed there and nothing in its failure is new. Where failing tests were parsed, each
    one (by name and message) failed there too; otherwise every line of its output is a
    line of the base's output, what moves aside (source positions, durations, hex
    addresses, a summary's counts), never the values in a message. A test the change
    made fail differently is the change's to fix."""
    before = next(
        (b for b in baseline or [] if (b.name, b.command) == (result.name, result.command)),
        None,
    )
    if before is None or before.passed or before.timed_out or result.timed_out:
        return False
    if result.failures and before.failures:
        known = {(f.name, normal(f.message, digits=False)) for f in before.failures}
        return all((f.name, normal(f.message, digits=False)) in known for f in result.failures)
    if result.exit_code != before.exit_code:
        return False
    seen = set(normal(before.output_tail).splitlines())
    return set(normal(result.output_tail).splitlines()) <= seen


def normal(text: str, *, digits: bool = True) -> str:
    """``text`` without what moves from one run of a failure to the next: colours, hex
    addresses, and (``digits``) source positions, durations and a summary's counts."""
    text = _HEX.sub("0x#", plain(text))
    lines = [" ".join(line.split()) for line in text.splitlines()]
    if digits:
        lines = [_moved(line) for line in lines]
    return "\n".join(lines)


def _moved(line: str) -> str:
    if _SUMMARY.match(line):
        return _NUMBER.sub("#", line)
    line = _MOVING[0].sub(":#", line)
    for moving in _MOVING[1:]:
        line = moving.sub("#", line)
    return line


def cache_paths(ex: Execution) -> list[str]:
    """What the dependency install made in the tree (not in golem's home, outside it):
    never part of a change."""
    conventions = ex.state.conventions
    paths = list(conventions.cache) if conventions is not None else []
    return [path for path in paths if not path.startswith("/")]


async def _key(ex: Execution) -> str:
    """The base as the cache knows it (the commit checked out on the host is the base
    until ship commits)."""
    state = ex.state
    conventions = state.conventions
    box = await ex.box()
    parts = {
        "tenant": ex.book.store.tenant or "",
        "repo": state.request.repo,
        "base": await ex.repo().head(),
        "dependencies": state.dependencies,
        "image": box.spec.image,
        "setup": conventions.setup if conventions is not None else [],
        "env": conventions.env if conventions is not None else {},
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _file(ex: Execution, key: str) -> Path:
    return ex.config.state_dir / "cache" / "baseline" / f"{key}.json"


def _load(ex: Execution, key: str) -> list[CheckResult]:
    try:
        data = json.loads(_file(ex, key).read_text())
        return [CheckResult.model_validate(item) for item in data["results"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []  # none yet, or unreadable: the checks run again when needed


def _store(ex: Execution, key: str, result: CheckResult) -> None:
    kept = [r for r in _load(ex, key) if (r.name, r.command) != (result.name, result.command)]
    path = _file(ex, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"results": [r.model_dump(mode="json") for r in [*kept, result]]})
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".baseline-")
    with os.fdopen(handle, "w") as out:
        out.write(text)
    os.replace(scratch, path)
