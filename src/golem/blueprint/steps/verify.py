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

from golem.blueprint.execution import Execution
from golem.blueprint.model import LoopNode
from golem.blueprint.steps.baseline import base_result, cache_paths
from golem.blueprint.steps.checks import GOAL, commands_of, run_check, run_checks
from golem.blueprint.steps.flaky import WHOLE, flaky_before, record_flaky
from golem.blueprint.steps.judge import judge, unexplained
from golem.checks import (
    MAX_CHANGED,
    CheckResult,
    Concern,
    changed_between,
    fingerprint,
    named_reports,
    remove_made,
)
from golem.core.errors import SandboxError
from golem.core.spec import WORKSPACE
from golem.forge import markdown
from golem.sandbox import Box, ExecRequest

__all__ = ["held_against", "unverified_reason", "verify"]

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


def held_against(results: list[CheckResult]) -> list[CheckResult]:
    """The failures that are the change's: neither already there nor flaky."""
    return [result for result in results if not result.passed and not result.preexisting]


def unverified_reason(ex: Execution, node: LoopNode, results: list[CheckResult]) -> str | None:
    """Why no check verified the change (None: one did). A check that fails on the base
    commit too verifies nothing; one that passed (on a rerun too) does, and so do tests
    whose only failures are the base commit's, untouched, once the change made some of the
    base's failing tests pass. Tests that all fail as on the base otherwise leave the change
    unverified whatever a lint or build did: those say nothing about whether it works."""
    if not results:
        source = ex.state.conventions.source if ex.state.conventions else "none read"
        return (
            f"no check found: the repository's conventions ({source}) name no "
            f"{' / '.join(node.checks)} command; add a .golem.toml with the commands that "
            "check this repository (`golem checks detect --write` writes one to start from)"
        )
    tests = [result for result in results if result.name == "test"]
    dropped = ex.state.dropped
    if dropped and not any(result.passed or _made_pass(result) for result in tests):
        names = ", ".join(f"{check.name} ({markdown.code(check.command)})" for check in dropped)
        return (
            f"{names} could not be prepared (not run), and no test check ran and passed: "
            "with a check dropped, only the repository's tests can verify the change"
        )
    if tests and not any(result.passed or _made_pass(result) for result in tests):
        failing = ", ".join(markdown.code(result.command) for result in tests)
        return (
            f"the tests fail on the base commit too, the same way: {failing}; they do not "
            "tell whether the change works, whatever the other checks say"
        )
    if any(result.passed or _made_pass(result) for result in results):
        return None
    names = ", ".join(f"{result.name} ({markdown.code(result.command)})" for result in results)
    return (
        f"every check fails on the base commit too: {names}; none of them tells whether "
        "the change works"
    )


def _made_pass(result: CheckResult) -> bool:
    """A test check whose failures are all the base commit's, untouched, and in which the
    change made tests that failed there pass: those ran, and pass now."""
    return result.preexisting and result.progress is not None and result.progress.passing > 0


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
    if judged.preexisting or not _may_be_flaky(ex, judged, base, concern):
        return judged
    again = await run_check(ex, node, result.name, result.command, round_=round_)
    if not again.passed:
        return judge(again, base, concern)
    record_flaky(ex, result)
    return again.model_copy(
        update={
            "flaky": True,
            "reason": f"failed at first (exit {result.exit_code}), passed when run again",
        }
    )


def _may_be_flaky(
    ex: Execution, result: CheckResult, base: CheckResult | None, concern: Concern
) -> bool:
    """Whether a failure is worth running again: never a timeout (another full one would say
    nothing new) nor a test the task names; a test seen flaky before, or a failure the
    change does not explain."""
    if result.timed_out:
        return False
    held = [f for f in result.failures if f.name not in result.set_aside]
    if any(concern.task_names(f) for f in held):
        return False
    known = set(flaky_before(ex, result))
    if (held and all(f.name in known for f in held)) or (not result.failures and WHOLE in known):
        return True
    return unexplained(result, base, concern)


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
