"""One verification: a loop's checks in the box, each failure judged against the baseline
(already failing there: preexisting) or run once more (passing then: flaky), until the
working tree holds still, so that what ships is the tree the checks passed on.

A check that changes the tree (a formatter, ``--fix``) and passes makes the checks run
again in the same round; changing it again then is a failure of that check. Files a check
made (absent before it ran: its report) are its artifacts, removed and no change. The box's
tree is brought back to the host after every verification.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from golem.blueprint.execution import Execution
from golem.blueprint.model import LoopNode
from golem.blueprint.steps.baseline import base_result, cache_paths
from golem.blueprint.steps.checks import GOAL, commands_of, run_check, run_checks
from golem.checks import (
    MAX_CHANGED,
    CheckResult,
    Concern,
    changed_between,
    fingerprint,
    flaky_before,
    flaky_file,
    held_against,
    judge,
    may_be_flaky,
    named_reports,
    record_flaky,
    remove_made,
    unverified_reason,
)
from golem.core.errors import SandboxError
from golem.core.spec import WORKSPACE
from golem.forge import markdown
from golem.sandbox import Box, ExecRequest

__all__ = ["verify", "why_unverified"]

Changed = dict[int, list[str]]
"""The checks (by position) that changed the tree, and the paths they changed."""


async def verify(ex: Execution, node: LoopNode, *, round_: int) -> list[CheckResult]:
    """The loop's checks (and a goal loop's goal after them), judged, on a tree they leave
    as they found it."""
    pairs = commands_of(ex, list(dict.fromkeys([*node.checks, GOAL])))
    if not pairs:
        return []
    box = await ex.box()
    if await ex.dependencies_as_installed():
        await run_checks(ex, node.id, ["setup"])  # what it made of them, made again
    await _drop_reports(box, [command for _, command in pairs])
    tree = await fingerprint(box, exclude=cache_paths(ex))
    results: list[CheckResult] = []
    for attempt in (1, 2):
        results, changed, tree = await _one_pass(ex, node.id, pairs, round_, tree)
        if not changed or held_against(results):
            break
        if attempt == 2:
            results = _refused(results, changed)
        else:
            names = ", ".join(f"`{pairs[i][1]}` changed {_paths(p)}" for i, p in changed.items())
            ex.note(f"{names}: verifying the changed tree again", node.id)
    await ex.mark_dependencies()
    await ex.sync()
    return results


async def _drop_reports(box: Box, commands: list[str]) -> None:
    """Remove the untracked reports the checks name (``--junitxml=report.xml``), left by
    the agent running them itself: each check then makes its own, an artifact."""
    paths = sorted({path for command in commands for path in named_reports(command)})
    if paths:
        drop = "; ".join(
            f"git ls-files --error-unmatch -- {p} >/dev/null 2>&1 || rm -f -- {p}"
            for p in map(shlex.quote, paths)
        )
        await box.execute(ExecRequest(cmd=drop, workdir=WORKSPACE, timeout=60))


def why_unverified(ex: Execution, node: LoopNode, results: list[CheckResult]) -> str | None:
    """Why no check of the loop verified the change (None: one did)."""
    conventions = ex.state.conventions
    containers = conventions.containers if conventions is not None else []
    return unverified_reason(
        results,
        checks=node.checks,
        source=conventions.source if conventions is not None else "none read",
        dropped=[(check.name, check.command) for check in ex.state.dropped],
        containers=containers,
        no_engine=_no_container_engine(ex) if containers else "",
    )


def _no_container_engine(ex: Execution) -> str:
    """Why the run's box has no container engine ("" when it has one): only a microvm
    box with ``containers`` has one (``Execution.container_box`` decides)."""
    isolation = ex.state.isolation
    if isolation is not None and isolation.tier == "microvm" and ex.box_spec().containers:
        return ""
    if why := ex.container_box().why:
        return why
    backend = isolation.backend if isolation is not None else ex.config.engine.backend.type
    return (
        f"the run's box ({backend} backend) has no container engine; give the blueprint's "
        "box tier: microvm and containers: true"
    )


async def _one_pass(
    ex: Execution, node: str, pairs: list[tuple[str, str]], round_: int, tree: str
) -> tuple[list[CheckResult], Changed, str]:
    box = await ex.box()
    results: list[CheckResult] = []
    changed: Changed = {}
    for position, (name, command) in enumerate(pairs):
        result = await run_check(ex, node, name, command, round_=round_)
        tree = await _moved(ex, box, tree, changed, position, command)
        if not result.passed:
            result = await _judged(ex, node, result, round_, tree)
            tree = await _moved(ex, box, tree, changed, position, command)  # a rerun's too
        results.append(result)
        ex.check_judged(node, result, round_)
    return results, changed, tree


async def _moved(
    ex: Execution, box: Box, tree: str, changed: Changed, position: int, command: str
) -> str:
    """The tree now; a change from ``tree`` is the check's at ``position``. Files the
    check made (absent before it ran: its report, a coverage file) are its artifacts:
    removed, so that they never ship, and no change of the tree."""
    now, made = await remove_made(box, tree, exclude=cache_paths(ex))
    if made:
        ex.note(
            f"{markdown.code(command)} made {_paths(made)}: its artifacts, removed (they do "
            "not ship)"
        )
    if now != tree:
        changed.setdefault(position, [])
        changed[position] += await changed_between(box, tree, now)
    return now


async def _judged(
    ex: Execution, node: str, result: CheckResult, round_: int, tree: str
) -> CheckResult:
    """A failed check judged against the base commit (``judge``: what of it is set aside
    as failing there already, untouched by the task and the change). What is left runs
    once more only when its history says it may be flaky: its tests were seen flaky
    before, or the change does not explain its failure (``unexplained``); passing then
    makes it flaky (passed), remembered for the repository. A goal loop's goal is the
    task itself: its failure is always the change's, its result on the base commit only
    kept (where the loop measures its progress from)."""
    base = await base_result(ex, node, result.name, result.command, tree=tree)
    if result.name == GOAL:
        return result
    concern = await _concern(ex, node, tree)
    if concern is None:
        base, concern = None, Concern()
    judged = judge(result, base, concern)
    flaky = flaky_before(_flaky_file(ex), judged)
    if judged.preexisting or not may_be_flaky(judged, base, concern, flaky):
        return judged
    again = await run_check(ex, node, result.name, result.command, round_=round_)
    if not again.passed:
        return judge(again, base, concern)
    record_flaky(_flaky_file(ex), result)
    return again.model_copy(
        update={
            "flaky": True,
            "reason": f"failed at first (exit {result.exit_code}), passed when run again",
        }
    )


async def _concern(ex: Execution, node: str, tree: str) -> Concern | None:
    """What the task names, and the paths the change (the base tree to ``tree``) touched;
    None when the box cannot tell (a resumed run's new box lacks the base tree): then no
    failure is set aside."""
    base = ex.state.base_tree
    changed: list[str] = []
    if base is not None:
        try:
            changed = await changed_between(await ex.box(), base, tree, limit=MAX_CHANGED)
        except SandboxError as exc:
            ex.note(
                f"cannot tell what the change touched ({exc.message}): no failure is set "
                "aside as the base commit's",
                node,
            )
            return None
    return Concern.of(ex.state.task_text, changed)


def _refused(results: list[CheckResult], changed: Changed) -> list[CheckResult]:
    refused = list(results)
    for position, paths in changed.items():
        result = results[position]
        refused[position] = result.model_copy(
            update={
                "passed": False,
                "flaky": False,
                "reason": f"{markdown.code(result.command)} changes the tree every time it runs "
                f"({_paths(paths)}): what it leaves cannot be verified; make it leave a "
                "tree it already fixed as it is, or ignore those files in .gitignore",
            }
        )
    return refused


def _paths(paths: list[str]) -> str:
    """The first few paths (a box's: as code), and how many more."""
    shown = ", ".join(markdown.code(path) for path in paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _flaky_file(ex: Execution) -> Path:
    """Where this run's repository's flaky tests are kept."""
    return flaky_file(ex.config.state_dir, ex.book.store.tenant or "", ex.state.request.repo)
