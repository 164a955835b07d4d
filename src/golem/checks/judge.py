"""Judging a failed check against its result on the base commit: what of its failure is the
change's to fix, and what is set aside as failing before the change, untouched; and whether
it is worth running once more (it may be flaky).

A failure that fails the same way on the base commit is set aside only when neither the task
nor the change concerns it (``concern``) and the change made no progress on its tests: where
failing tests were parsed, test by test (a test of the task, of a file or module the change
touched, or in a file where some of the base's failures now pass, is the agent's); otherwise
the check as a whole (output that names a path the change touched, or a name the task names,
is the agent's). Nothing of a check that passed on the base commit is set aside.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Sequence

from golem.checks.concern import Concern, test_paths
from golem.checks.contracts import CheckResult, TestFailure, TestProgress
from golem.checks.history import WHOLE
from golem.core.ansi import plain
from golem.forge import markdown

__all__ = [
    "already_failing",
    "held_against",
    "judge",
    "may_be_flaky",
    "normal",
    "unexplained",
    "unverified_reason",
]

_SEPARATOR = re.compile(r"::|[\u203a>./]")
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


def judge(result: CheckResult, base: CheckResult | None, concern: Concern) -> CheckResult:
    """``result`` (failed) with what is set aside of it: ``preexisting`` when all of it is,
    the tests set aside by name, and the progress on the tests the change concerns."""
    if base is None or base.passed or base.timed_out or result.timed_out:
        return result
    if result.failures and base.failures:
        return _by_test(result, base, concern)
    whole = concern.text(result.command) or concern.text(result.output_tail)
    if already_failing(result, [base]) and not whole:
        return result.model_copy(update={"preexisting": True})
    return result


def unexplained(result: CheckResult, base: CheckResult | None, concern: Concern) -> bool:
    """Whether a judged failure is one the change does not explain: the base commit did not
    fail this way, and none of it concerns the task or the change (a test that may be flaky,
    worth running once more)."""
    if base is None or result.timed_out:
        return False
    held = [f for f in result.failures if f.name not in result.set_aside]
    if held:
        failed_before = {f.name for f in base.failures} if not base.passed else set()
        return not any(f.name in failed_before or concern.test(f) for f in held)
    if not base.passed:
        return False
    return not (concern.text(result.command) or concern.text(result.output_tail))


def held_against(results: list[CheckResult]) -> list[CheckResult]:
    """The failures that are the change's: neither already there nor flaky."""
    return [result for result in results if not result.passed and not result.preexisting]


def may_be_flaky(
    result: CheckResult, base: CheckResult | None, concern: Concern, flaky: Collection[str]
) -> bool:
    """Whether a failure is worth running again: never a timeout (another full one would say
    nothing new) nor a test the task names; a test seen ``flaky`` before, or a failure the
    change does not explain."""
    if result.timed_out:
        return False
    held = [f for f in result.failures if f.name not in result.set_aside]
    if any(concern.task_names(f) for f in held):
        return False
    if (held and all(f.name in flaky for f in held)) or (not result.failures and WHOLE in flaky):
        return True
    return unexplained(result, base, concern)


def unverified_reason(
    results: list[CheckResult],
    *,
    checks: Sequence[str],
    source: str,
    dropped: Sequence[tuple[str, str]] = (),
    containers: Sequence[str] = (),
    no_engine: str = "",
) -> str | None:
    """Why no check verified the change (None: one did): ``results`` of a verification
    that ran ``checks`` (names) from conventions read from ``source``, with the checks
    ``dropped`` (name, command) since their preparation failed. A check that fails on the base
    commit too verifies nothing; one that passed (on a rerun too) does, and so do tests
    whose only failures are the base commit's, untouched, once the change made some of the
    base's failing tests pass. Tests that all fail as on the base otherwise leave the change
    unverified whatever a lint or build did: those say nothing about whether it works.
    Checks that need containers (``containers``: why, each) in a box without a container
    engine (``no_engine``: why it has none) verify nothing, passing or not: tests skip
    without docker, and a service they expect is not there."""
    if containers and no_engine and results:
        return (
            f"needs containers: {no_engine.rstrip('.')}; the checks need "
            f"{', '.join(containers)}, and without them they do not tell whether the change "
            "works"
        )
    if not results:
        return (
            f"no check found: the repository's conventions ({source}) name no "
            f"{' / '.join(checks)} command; add a .golem.toml with the commands that "
            "check this repository (`golem checks detect --write` writes one to start from)"
        )
    tests = [result for result in results if result.name == "test"]
    if dropped and not any(result.passed or _made_pass(result) for result in tests):
        names = ", ".join(f"{name} ({markdown.code(command)})" for name, command in dropped)
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


def _by_test(result: CheckResult, base: CheckResult, concern: Concern) -> CheckResult:
    known = {(f.name, normal(f.message, digits=False)) for f in base.failures}
    now = {f.name for f in result.failures}
    fixed = [f for f in base.failures if f.name not in now]
    moved = {_group(f) for f in fixed}

    def progressed(failure: TestFailure) -> bool:
        group = _group(failure)
        return bool(fixed) and (group is None or group in moved)

    aside = [
        f.name
        for f in result.failures
        if (f.name, normal(f.message, digits=False)) in known
        and not concern.test(f)
        and not progressed(f)
    ]
    targets = [f for f in base.failures if concern.test(f) or f.name not in now or progressed(f)]
    still = [f for f in targets if f.name in now]
    progress = TestProgress(passing=len(targets) - len(still), of=len(targets)) if targets else None
    return result.model_copy(
        update={
            "preexisting": len(aside) == len(result.failures),
            "set_aside": aside,
            "progress": progress,
        }
    )


def _group(failure: TestFailure) -> str | None:
    """The file (or suite) a test belongs to: a progress in one of its tests is progress on
    all of them."""
    paths = test_paths(failure)
    if paths:
        return posixpath.normpath(paths[0])
    last = None
    for last in _SEPARATOR.finditer(failure.name):  # noqa: B007 - the last one is wanted
        pass
    prefix = failure.name[: last.start()].strip() if last is not None else ""
    return prefix or None


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
