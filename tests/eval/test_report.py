"""Results and reports: a results directory keeps each attempt whole, resumes only with the
settings it was made with, and runs again only what did not run; the report's totals,
pass@k and the agreement matrix of golem's verdicts with the hidden tests; the HTML page
shows what agents and repositories wrote as text, never as markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem.core.console import GolemConsole
from golem.core.errors import EvalError
from golem.eval import (
    Attempt,
    EvalSettings,
    EvalTask,
    ResultsDir,
    Score,
    build_report,
    compare,
    comparison_html,
    print_comparison,
    print_report,
    report_html,
    write_tasks,
)
from golem.eval.report import pass_at

BASE = "0123456789abcdef0123456789abcdef01234567"
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def settings(tmp_path: Path, **changes: object) -> EvalSettings:
    tasks = tmp_path / "tasks.jsonl"
    if not tasks.exists():
        task = EvalTask(
            instance_id="t-1", repo="o/r", base_commit=BASE, test_patch="",
            problem_statement="x", FAIL_TO_PASS=["a"], patch=f"+{HOSTILE}\n",
        )  # fmt: skip
        write_tasks(tasks, [task])
    fields: dict[str, object] = {
        "tasks": str(tasks), "tasks_sha256": ResultsDir.digest(tasks), "model": "m",
        "blueprint": "minion", "attempts": 2, "budget_usd": 1.0, "golem_version": "0.1.0",
    }  # fmt: skip
    return EvalSettings.model_validate({**fields, **changes})


def attempt(instance: str, number: int, verdict: str, resolved: bool, **more: object) -> Attempt:
    status = {"verified": "succeeded"}.get(verdict, verdict)
    return Attempt.model_validate({"instance_id": instance, "attempt": number, "status": status,
                                   "verdict": verdict, "resolved": resolved, **more})  # fmt: skip


def test_an_evaluation_resumed_with_other_settings_is_refused_naming_what_differs(
    tmp_path: Path,
) -> None:
    results = ResultsDir(tmp_path / "out")
    results.begin(settings(tmp_path))
    assert results.begin(settings(tmp_path, label="again")).label == ""  # the same: resumed
    with pytest.raises(EvalError, match=r"model 'm' \(now 'other'\); attempts 2 \(now 3\)"):
        results.begin(settings(tmp_path, model="other", attempts=3))
    with pytest.raises(EvalError, match=r"golem_version '0\.1\.0' \(now '0\.2\.0'\)"):
        results.begin(settings(tmp_path, golem_version="0.2.0"))


def test_an_attempt_not_run_is_run_again_and_a_finished_one_never(tmp_path: Path) -> None:
    results = ResultsDir(tmp_path / "out")
    results.keep(attempt("t-1", 1, "escalated", False))
    results.keep(Attempt(instance_id="t-1", attempt=2, not_run="cannot fetch"))
    assert results.finished("t-1", 1)
    assert not results.finished("t-1", 2)
    assert not results.finished("t-2", 1)
    (tmp_path / "out" / "attempts" / "t-1" / "1.json").write_text("{broken")
    with pytest.raises(EvalError, match=r"1\.json cannot be read .*remove it to run it again"):
        results.attempts()


def test_pass_at_k_is_the_unbiased_estimate_that_one_of_k_attempts_resolves() -> None:
    assert pass_at(5, 0, 1) == 0.0
    assert pass_at(5, 5, 3) == 1.0
    assert pass_at(4, 1, 1) == 0.25
    assert pass_at(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    assert pass_at(2, 1, 5) == 1.0  # k above n: any of the n


def test_the_report_counts_each_verdict_against_the_hidden_tests(tmp_path: Path) -> None:
    results = ResultsDir(tmp_path / "out")
    results.begin(settings(tmp_path))
    for made in (
        attempt("t-1", 1, "verified", True, cost_usd=0.5, turns=10, nodes={"implement": 4.0}),
        attempt("t-1", 2, "verified", False, cost_usd=0.25, turns=6, nodes={"implement": 2.0}),
        attempt("t-2", 1, "escalated", True),
        attempt("t-2", 2, "escalated", False),
        attempt("t-3", 1, "unverified", False),
        attempt("t-3", 2, "failed", False),
        Attempt(instance_id="t-4", attempt=1, not_run="its repository cannot be fetched"),
    ):
        results.keep(made)
    report = build_report(results)
    totals, agreement = report.totals, report.agreement
    assert (totals.attempts, totals.not_run, totals.resolved) == (6, 1, 2)
    assert totals.pass_at_1 == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert totals.pass_at_k == pytest.approx((1 + 1 + 0) / 3)
    assert totals.cost_usd == 0.75
    assert totals.mean_node_seconds == {"implement": 1.0}  # 6 s over 6 runs
    assert agreement.matrix["verified"] == {"resolved": 1, "unresolved": 1}
    assert agreement.matrix["escalated"] == {"resolved": 1, "unresolved": 1}
    assert agreement.matrix["unverified"] == {"resolved": 0, "unresolved": 1}
    assert (agreement.agreed, agreement.judged, agreement.rate) == (2, 4, 0.5)
    assert (agreement.verified_unresolved, agreement.escalated_resolved) == (1, 1)
    assert [t.not_run for t in report.tasks if t.instance_id == "t-4"] == [
        "its repository cannot be fetched"
    ]
    console = GolemConsole(record=True, width=200)
    print_report(console, report)
    assert "agreement 2/4 (50.0%): 1 verified but failing the hidden tests" in console.export_text()


def test_the_report_page_shows_what_agents_and_repositories_wrote_as_text(
    tmp_path: Path,
) -> None:
    results = ResultsDir(tmp_path / "out")
    results.begin(settings(tmp_path, label=HOSTILE))
    score = Score(resolved=False, fail_to_pass={HOSTILE: "failed"})
    results.keep(attempt("t-1", 1, "escalated", False, patch=f"+{HOSTILE}\n", error=HOSTILE,
                         score=score, run_id=HOSTILE))  # fmt: skip
    report = build_report(results)
    pages = [report_html(report), comparison_html(compare(report, report))]
    for page in pages:
        assert "<script" not in page
        assert "<img" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "default-src 'none'" in page  # nothing runs, nothing is fetched
    assert json.loads(report.model_dump_json())["attempts"][0]["error"] == HOSTILE


def test_an_evaluation_of_one_attempt_per_task_states_pass_at_1_once(tmp_path: Path) -> None:
    results = ResultsDir(tmp_path / "out")
    results.begin(settings(tmp_path, attempts=1))
    results.keep(attempt("t-1", 1, "verified", True))
    report = build_report(results)
    console = GolemConsole(record=True, width=200)
    print_report(console, report)
    print_comparison(console, compare(report, report))
    text = console.export_text()
    assert text.count("pass@1") == 3  # the report's line, and each of the comparison's two
    assert report_html(report).count("pass@1") == 1
