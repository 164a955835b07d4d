"""What a shipped run says: its pull request's title and body, and its commit message.

What the body quotes that golem did not write (a command or a test's name from the
repository, an error carrying a forge's or a box's words) goes in as code
(``golem.forge.markdown``)."""

from __future__ import annotations

import re

from golem.blueprint.show import check_outcome, failing_tests
from golem.blueprint.state import AttemptRecord, RunState
from golem.checks import CheckResult, describe_failures
from golem.forge import markdown

__all__ = ["body", "commit_message", "marked_run", "run_marker", "title"]


def title(state: RunState, *, escalate: bool) -> str:
    """``fix: ...`` or ``feat: ...`` from the task's title (a conventional prefix it has
    kept as it is, never a second one), marked when a human must finish."""
    text = _conventional(state.title)
    if text is None:
        kind = _kind(state)
        words = _FIX_WORD.sub("", state.title, count=1) if kind == "fix" else state.title
        words = words.strip() or state.title
        text = f"{kind}: {words[:1].lower()}{words[1:]}"
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
    dropping = {check.preparation for check in state.dropped}
    failed_preparation = [
        result for result in state.prepared if not result.passed and result.command not in dropping
    ]
    if failed_preparation:
        lines += ["## Preparing the box failed", "", *_table(failed_preparation), ""]
    lines += ["## Checks", "", *_table(state.checks), ""]
    if state.attempts:
        lines += ["## Attempts", "", *_attempts(state.attempts), ""]
    if state.dropped:
        lines += [
            "## Not run",
            "",
            "These checks could not be prepared, so they did not run:",
            "",
            *[
                f"- {check.name} ({markdown.code(check.command)}): {check.reason}"
                for check in state.dropped
            ],
            "",
        ]
    untouched = _untouched(state.checks)
    if untouched:
        lines += [
            "## Failing before this change, not touched",
            "",
            "These fail on the base commit too, the same way, and neither the task nor this "
            "change concerns them:",
            "",
            *untouched,
            "",
        ]
    if state.baseline:  # checks that ran on the base commit (only those that failed after)
        lines += [_baseline(state.baseline, state.base), ""]
    lines += [
        f"Fix rounds used: {state.rounds} · cost: ${state.cost_usd:.4f} · "
        f"{state.turns} model turns",
        "",
        *([f"isolation: {state.isolation}", ""] if state.isolation is not None else []),
        *(
            [f"started from the prepared snapshot {state.started_from.describe()}", ""]
            if state.started_from is not None
            else []
        ),
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


_CONVENTIONAL = re.compile(
    r"^\s*(feat|fix|docs|chore|refactor|test|tests|perf|build|ci|style|revert)"
    r"(\([^)\n]*\))?(!)?\s*:\s*(\S.*)$",
    re.I | re.S,
)
_FIX_WORD = re.compile(r"^\s*(?:bug\s*fix|bugfix|fix(?:es|ed)?|bug)\b\s*[:\-]?\s*", re.I)
_BUG_LABELS = re.compile(r"\b(bug|defect|regression|crash)\b", re.I)
_FEATURE_LABELS = re.compile(r"\b(feature|enhancement|feat)\b", re.I)
_FEATURE = re.compile(
    r"^\s*(?:\S+\s+)?(add|adds|support|supports|implement|implements|introduce|introduces|"
    r"allow|allows|enable|enables|create|provide|expose|let|new|feature)\b",
    re.I,
)
_BEHAVES = re.compile(r"^\s*\S+\s+[a-z]+s\b")
"""A statement of how something behaves ("Clamp returns ...", "midpoint overflows"): a
bug report's title; a change asked for is imperative ("Say hello more warmly")."""
_FIXING = re.compile(
    r"\b(fix|bug|fail|broken|error|crash|wrong|incorrect|regress|instead|should|doesn'?t|"
    r"does not|isn'?t|is not|not work|missing|overflow|panic|exception|typo|misspell|leak|"
    r"hang|flaky|forget|ignore|leave|lose|drop|truncat|mismatch|unexpected)",
    re.I,
)
_CODE = re.compile(r"\w\(|`[^`]+`|\b[a-z0-9]+_[a-z0-9_]+\b")


def _conventional(text: str) -> str | None:
    """``text`` with its conventional-commit prefix in the usual spelling, or None when
    it has none."""
    found = _CONVENTIONAL.match(text)
    if found is None:
        return None
    kind, scope, bang, rest = found.groups()
    return f"{kind.lower()}{scope or ''}{bang or ''}: {rest.strip()}"


def _kind(state: RunState) -> str:
    """``fix`` or ``feat``: the issue's labels say it; else a change that made tests pass
    that failed on the base commit is a fix; else the task's words (a title that asks
    for something new is a feature; one that tells what goes wrong, or states how a piece
    of code behaves, a fix)."""
    labels = " ".join(state.issue.labels) if state.issue is not None else ""
    if _BUG_LABELS.search(labels):
        return "fix"
    if _FEATURE_LABELS.search(labels):
        return "feat"
    if any(check.progress is not None and check.progress.passing for check in state.checks):
        return "fix"
    if _FEATURE.match(state.title):
        return "feat"
    if _FIXING.search(state.task_text) or _CODE.search(state.title) or _BEHAVES.match(state.title):
        return "fix"
    return "feat"


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


def _untouched(checks: list[CheckResult], shown: int = 20) -> list[str]:
    """Each check's failures set aside: its tests, or the whole check."""
    lines = []
    for check in checks:
        if check.passed or not (check.preexisting or check.set_aside):
            continue
        if not check.set_aside:
            lines.append(f"- {check.name} ({markdown.code(check.command)})")
            continue
        names = ", ".join(markdown.code(name) for name in check.set_aside[:shown])
        more = len(check.set_aside) - shown
        rest = f" and {more} more" if more > 0 else ""
        lines.append(f"- {check.name} ({markdown.code(check.command)}): {names}{rest}")
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


def _attempts(attempts: list[AttemptRecord]) -> list[str]:
    """Every attempt of a best-of-N run: its checks, diff, cost, and why it won or lost
    (a failure's words, which may be a box's, and the model judge's, as code)."""
    lines = [
        "| attempt | result | checks passed | lines changed | cost | why |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for attempt in attempts:
        diff = "" if attempt.diff_lines is None else str(attempt.diff_lines)
        passed = f"{attempt.passing} of {len(attempt.checks)}"
        why = (
            markdown.code(attempt.verdict, table=True)
            if attempt.status == "failed"
            else (attempt.verdict.replace("|", "\\|"))
        )
        if attempt.judged:  # the model's words: as code
            why += f"; the judge: {markdown.code(attempt.judged, table=True)}"
        lines.append(
            f"| {attempt.number} | {attempt.status} | {passed} | {diff} | "
            f"${attempt.cost_usd:.4f} | {why} |"
        )
    return lines


def _baseline(baseline: list[CheckResult], base: str) -> str:
    failing = [check for check in baseline if not check.passed]
    if not failing:
        named = ", ".join(f"{check.name} ({markdown.code(check.command)})" for check in baseline)
        return f"On the base commit ({base}), before the change, these passed: {named}."
    named = ", ".join(f"{check.name} ({markdown.code(check.command)})" for check in failing)
    return f"On the base commit ({base}), before the change, these failed already: {named}."
