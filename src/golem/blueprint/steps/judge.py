"""Judging a failed check against its result on the base commit: what of its failure is the
change's to fix, and what is set aside as failing before the change, untouched.

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

from golem.blueprint.steps.baseline import already_failing, normal
from golem.checks import CheckResult, Concern, TestFailure, TestProgress, test_paths

__all__ = ["judge", "unexplained"]

_SEPARATOR = re.compile(r"::|[\u203a>./]")


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
