"""The pull request says what was verified and how: each check's result in words (the
reason of a kill, flaky, failing on the base too), the box's failed preparation, a "Not
verified" section, and the failing tests of an escalation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.state import AttemptRecord
from golem.blueprint.steps.pr_text import body, title
from golem.checks import CheckResult, TestProgress
from golem.forge import Issue
from golem.store import Store
from tests.blueprint.outcomes import OOM, with_outcomes
from tests.blueprint.runs import (  # noqa: F401 - the fixtures of the run tests
    MakeRunner,
    make_runner,
    pull_requests,
    remote,
    request,
    store,
)

HELD = """\
name: held
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - {id: implement, kind: agent, prompt: "{{ task }}", next: hold}
  - id: hold
    kind: gate
    message: Ship it?
    timeout: 0.01
    default: rejected
    next: {approved: escalate, rejected: end}
  - {id: escalate, kind: host, action: escalate}
"""


@pytest.mark.bwrap
async def test_an_escalated_pull_request_shows_reasons_preparation_and_failing_tests(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    blueprint = tmp_path / "held.yaml"
    blueprint.write_text(HELD)
    held = await make_runner().start(request(remote, blueprint=str(blueprint)))
    book = RunBook(store)
    state = await book.load(held.id)
    assert state is not None
    assert state.pr is None
    # The results a run records before it escalates, then the escalation itself.
    state = with_outcomes(state).model_copy(
        update={"status": "running", "current": "escalate", "owner_pid": None}
    )
    await book.save(state)
    escalated = await make_runner().resume(state.id)
    assert escalated.status == "escalated", escalated.error
    [pr] = await pull_requests(store)
    assert pr.draft
    assert f"| test | `pytest -q` | failed ({OOM}) | 1.5s |" in pr.body
    assert "| lint | `ruff check .` | failed (exit 1) · fails on the base commit too |" in pr.body
    assert "| build | `python -m build` | flaky (failed, then passed) |" in pr.body
    assert "## Preparing the box failed" in pr.body
    assert f"| setup | `npm run prepare \\| tee log` | failed ({OOM}) |" in pr.body
    assert "| install |" not in pr.body  # it passed
    assert "## Not verified\n\nNo check verified this change: no check ran on the change." in (
        pr.body
    )
    assert "Failing tests:\n\n- `test: tests/test_calc.py::test_add`" in pr.body
    assert "golem stopped:\n\n```\nsetup failed: npm run prepare | tee log" in pr.body
    assert "these failed already: lint (`ruff check .`)" in pr.body


def test_a_verified_pull_request_has_no_not_verified_section() -> None:
    state = with_outcomes(_state()).model_copy(
        update={"unverified": None, "error": None, "prepared": []}
    )
    text = body(state, escalate=False)
    assert "## Not verified" not in text
    assert "## Preparing the box failed" not in text
    assert "## What still fails" not in text


SAID = "exit 1 | injected | cells\n## Heading @channel <b>x</b>"
"""Words a box or a model wrote, trying to leave their table cell."""


@pytest.mark.parametrize(
    ("attempt", "shown"),
    [
        (
            AttemptRecord(number=2, status="failed", verdict=f"failed: {SAID}"),
            "`failed: exit 1 \\| injected \\| cells ## Heading @channel <b>x</b>`",
        ),
        (
            AttemptRecord(number=2, status="won", diff_lines=9, verdict="verified", judged=SAID),
            "verified; the judge: `exit 1 \\| injected \\| cells ## Heading @channel <b>x</b>`",
        ),
    ],
    ids=["failed attempt", "judge's reason"],
)
def test_an_attempts_words_from_a_box_or_the_judge_stay_in_their_table_cell_as_code(
    attempt: AttemptRecord, shown: str
) -> None:
    attempts = [
        AttemptRecord(number=1, status="lost", diff_lines=2, verdict="a larger diff"),
        attempt,
    ]
    text = body(_state().model_copy(update={"attempts": attempts}), escalate=False)
    [row] = [line for line in text.splitlines() if line.startswith("| 2 |")]
    assert len(re.split(r"(?<!\\)\|", row)) == 8  # six cells: a pipe it wrote is escaped
    assert shown in row
    assert "\n## Heading" not in text


def _state() -> RunState:
    request = RunRequest(repo="/r", task="Fix it")
    return RunState(id="run-1", request=request, blueprint="minion", blueprint_source="")


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("fix: the parser crashes on empty input", "fix: the parser crashes on empty input"),
        ("Fix: parser crashes on empty input", "fix: parser crashes on empty input"),
        ("Fix crash on empty input", "fix: crash on empty input"),
        ("slugify() leaves empty words", "fix: slugify() leaves empty words"),
        ("Clamp returns the lower bound", "fix: clamp returns the lower bound"),
        ("midpoint overflows for large numbers", "fix: midpoint overflows for large numbers"),
    ],
)
def test_a_bug_fix_has_one_fix_prefix_whatever_its_title_says(task: str, expected: str) -> None:
    state = _state().model_copy(update={"title": task, "task_text": task})
    assert title(state, escalate=False) == expected


def test_a_task_asking_for_something_new_is_a_feature_its_own_prefix_kept() -> None:
    def titled(task: str) -> str:
        return title(_state().model_copy(update={"title": task, "task_text": task}), escalate=False)

    assert titled("feat(cli): add --json") == "feat(cli): add --json"
    assert titled("Add a --json flag to runs show") == "feat: add a --json flag to runs show"
    assert titled("This adds dark mode") == "feat: this adds dark mode"
    assert titled("Say hello more warmly") == "feat: say hello more warmly"


def test_an_issues_labels_and_tests_made_to_pass_say_it_is_a_fix() -> None:
    task = "Dark mode for the dashboard"
    labelled = _state().model_copy(
        update={"title": task, "task_text": task, "issue": Issue(title=task, labels=["bug"])}
    )
    assert title(labelled, escalate=False) == "fix: dark mode for the dashboard"
    made_pass = CheckResult(
        name="test", command="pytest", passed=True, exit_code=0, duration=1.0,
        progress=TestProgress(passing=2, of=2),
    )  # fmt: skip
    fixed = _state().model_copy(update={"title": task, "task_text": task, "checks": [made_pass]})
    assert title(fixed, escalate=False) == "fix: dark mode for the dashboard"
