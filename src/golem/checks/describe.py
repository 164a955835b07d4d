"""Failed checks in words, as the fix prompt, the escalation and the pull request show
them: what is held against the change first, then what is not the change's doing."""

from __future__ import annotations

from golem.checks.contracts import CheckResult
from golem.forge import markdown

__all__ = ["describe_failure", "describe_failures"]


def describe_failure(result: CheckResult, *, tail: int | None = None) -> str:
    """One failed check: its command, how it ended, and its output's last lines."""
    output = result.output_tail
    if tail is not None:
        output = "\n".join(output.splitlines()[-tail:])
    return f"{markdown.code(result.command)} ({_how(result)})\n\n{markdown.block(output)}"


def _how(result: CheckResult) -> str:
    if result.reason:
        return result.reason
    return "timed out" if result.timed_out else f"exit {result.exit_code}"


def describe_failures(results: list[CheckResult]) -> str:
    """The failing checks held against the change, as the fix prompt and the escalation
    show them (with the progress on the tests the task and the change concern: "these
    still fail; 2 of 4 now pass"); what fails on the base commit too, untouched, or failed
    once and then passed, is named after them as not the change's doing."""
    held = [result for result in results if not result.passed and not result.preexisting]
    parts = [f"### {result.name}: {describe_failure(result)}{_progress(result)}" for result in held]
    not_yours = [
        f"- {result.name}: {markdown.code(result.command)} "
        + ("fails on the base commit too" if result.preexisting else "failed once, then passed")
        for result in results
        if result.preexisting or result.flaky
    ]
    not_yours += [
        f"- {result.name}: `{result.command}`: {_names(result.set_aside)} fail on the base "
        "commit too, the same way"
        for result in held
        if result.set_aside
    ]
    if not_yours:
        parts.append(
            "Not yours (already so before your change; leave them unless the task is about "
            "them):\n" + "\n".join(not_yours)
        )
    return "\n\n".join(parts) or "(no failing checks)"


def _progress(result: CheckResult) -> str:
    """What the fixer is told of the tests of its task that failed on the base commit."""
    progress = result.progress
    if progress is None or progress.passing == progress.of:
        return ""
    return (
        f"\n\nThese tests failed before your change, and the task or your change concerns "
        f"them: they are yours to make pass. These still fail; {progress}."
    )


def _names(names: list[str], shown: int = 10) -> str:
    listed = ", ".join(f"`{name}`" for name in names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")
