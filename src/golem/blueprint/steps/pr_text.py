"""What a shipped run says: its pull request's title and body, and its commit message.

What the body quotes that golem did not write (a command or a test's name from the
repository, an error carrying a forge's or a box's words) goes in as code
(``golem.forge.markdown``)."""

from __future__ import annotations

import re

from golem.blueprint.show import check_outcome, failing_tests
from golem.blueprint.state import RunState
from golem.blueprint.steps.checks import describe_failures
from golem.forge import CheckResult, markdown

__all__ = ["body", "commit_message", "marked_run", "run_marker", "title"]


def title(state: RunState, *, escalate: bool) -> str:
    """``fix: ...`` or ``feat: ...`` from the task's title, marked when a human must finish."""
    text = f"{_kind(state)}: {state.title[:1].lower()}{state.title[1:]}"
    return f"[needs a human] {text}" if escalate else text


def commit_message(state: RunState, *, escalate: bool) -> str:
    """The title, the agent's summary, and a note when the checks still fail."""
    summary = state.summary or "(the agent gave no summary)"
    note = "\n\nThe repository's checks still fail; see the pull request." if escalate else ""
    return f"{title(state, escalate=False)}\n\n{summary}{note}\n"


def body(state: RunState, *, escalate: bool) -> str:
    """The pull request's body: summary, what was not verified or still fails, the box's
    preparation when it failed, the checks, then the run's figures."""
    lines = ["## Summary", "", state.summary or "(the agent gave no summary)", ""]
    if state.unverified:
        lines += [
            "## Not verified",
            "",
            f"No check verified this change: {state.unverified.rstrip('.')}. Review it and run its "
            "tests by hand before merging.",
            "",
        ]
    if escalate:
        lines += _still_failing(state)
    failed_preparation = [result for result in state.prepared if not result.passed]
    if failed_preparation:
        lines += ["## Preparing the box failed", "", *_table(failed_preparation), ""]
    lines += ["## Checks", "", *_table(state.checks), ""]
    if state.baseline:  # checks that ran on the base commit (only those that failed after)
        lines += [_baseline(state.baseline, state.base), ""]
    lines += [
        f"Fix rounds used: {state.rounds} · cost: ${state.cost_usd:.4f} · "
        f"{state.turns} model turns",
        "",
        *([f"isolation: {state.isolation}", ""] if state.isolation is not None else []),
        "Trajectories (on the golem host):",
        *[f"- `{path}`" for path in state.trajectories],
        "",
        f"Opened by golem run `{state.id}`"
        + (f" for #{state.issue.number}." if state.issue and state.issue.number else "."),
    ]
    if state.issue is not None and state.issue.number and not escalate:
        lines.append(f"\nCloses #{state.issue.number}")
    lines.append(f"\n{run_marker(state.id)}")
    return "\n".join(lines) + "\n"


def run_marker(run_id: str) -> str:
    """The invisible mark that names the run a pull request's body came from (a webhook
    about the pull request finds its run by it, and checks the run's PR is this one)."""
    return f"<!-- golem:pr {run_id} -->"


def marked_run(body: str) -> str | None:
    """The run a pull request's body names by ``run_marker``, or None."""
    found = RUN_MARK.search(body)
    return found["run"] if found else None


RUN_MARK = re.compile(r"<!-- golem:pr (?P<run>[\w.:-]+) -->")


def _kind(state: RunState) -> str:
    words = state.task_text.lower()
    return "fix" if re.search(r"\b(fix|bug|fail|broken|error|crash)", words) else "feat"


def _still_failing(state: RunState) -> list[str]:
    lines = ["## What still fails", ""]
    if state.error:
        lines += ["golem stopped:", "", markdown.block(state.error), ""]
    if any(not check.passed for check in state.checks):
        lines += [describe_failures(state.checks), ""]
    tests = failing_tests(state.checks)
    if tests:
        lines += ["Failing tests:", "", *[f"- {markdown.code(name)}" for name in tests], ""]
    return lines


def _table(checks: list[CheckResult]) -> list[str]:
    lines = ["| check | command | result | time |", "| --- | --- | --- | --- |"]
    for check in checks:
        command = markdown.code(check.command, table=True)
        outcome = check_outcome(check).replace("|", "\\|")  # a reason may quote a command
        lines.append(f"| {check.name} | {command} | {outcome} | {check.duration:.1f}s |")
    if not checks:
        lines.append("| (none) | | | |")
    return lines


def _baseline(baseline: list[CheckResult], base: str) -> str:
    failing = [check for check in baseline if not check.passed]
    if not failing:
        named = ", ".join(f"{check.name} ({markdown.code(check.command)})" for check in baseline)
        return f"On the base commit ({base}), before the change, these passed: {named}."
    named = ", ".join(f"{check.name} ({markdown.code(check.command)})" for check in failing)
    return f"On the base commit ({base}), before the change, these failed already: {named}."
