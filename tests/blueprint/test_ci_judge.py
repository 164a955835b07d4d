"""How the ci node judges what a forge reports on a commit: which jobs count (the node's
names or globs, else the base branch's required checks, else all), which never fail it,
and when waiting is over."""

from __future__ import annotations

from typing import Any

from golem.blueprint.model import AgentSettings, CINode
from golem.blueprint.steps.ci_wait import judge
from golem.forge.ci import CIJob, CIStatus


def node(**fields: Any) -> CINode:
    return CINode(id="ci", fix=AgentSettings(prompt="fix"), appear=60, wait=600, **fields)


def job(name: str, state: str, **fields: Any) -> CIJob:
    return CIJob.model_validate(
        {"id": name, "name": name, "kind": "check", "state": state, **fields}
    )


def status(*jobs: CIJob, required: list[str] | None = None) -> CIStatus:
    return CIStatus(commit="c" * 40, jobs=list(jobs), required=required)


def test_nothing_reported_is_waited_for_then_no_ci() -> None:
    assert judge(node(), status(), elapsed=59) is None
    silent = judge(node(), status(), elapsed=60)
    assert silent is not None
    assert silent.kind == "no_ci"


def test_jobs_allowed_to_fail_skipped_or_neutral_never_fail_it() -> None:
    verdict = judge(
        node(),
        status(
            job("test", "passed"),
            job("flaky-e2e", "failed", allowed_to_fail=True),
            job("docs", "skipped"),
            job("lint", "neutral"),
            job("nightly", "running", allowed_to_fail=True),  # not waited for either
        ),
        elapsed=0,
    )
    assert verdict is not None
    assert verdict.kind == "passed"


def test_a_cancelled_job_fails_it_and_the_note_says_cancelled() -> None:
    verdict = judge(node(), status(job("test", "cancelled"), job("lint", "passed")), elapsed=0)
    assert verdict is not None
    assert verdict.kind == "failed"
    assert [j.name for j in verdict.failing] == ["test"]
    assert "`test` cancelled" in verdict.note


def test_it_waits_for_every_counted_job_before_failing() -> None:
    assert judge(node(), status(job("test", "failed"), job("lint", "pending")), elapsed=1) is None


def test_the_nodes_globs_choose_the_jobs_that_count() -> None:
    jobs = status(
        job("test (3.12)", "passed"), job("test (3.8)", "passed"), job("deploy", "failed")
    )
    verdict = judge(node(required=["test (*)"]), jobs, elapsed=0)
    assert verdict is not None
    assert verdict.kind == "passed"


def test_branch_protection_chooses_them_when_the_node_names_none() -> None:
    jobs = status(job("test", "passed"), job("optional", "running"), required=["test"])
    verdict = judge(node(), jobs, elapsed=0)
    assert verdict is not None
    assert verdict.kind == "passed"


def test_a_required_check_not_created_is_waited_for_then_missing() -> None:
    jobs = status(job("test", "passed"), required=["test", "build"])
    assert judge(node(), jobs, elapsed=59) is None
    verdict = judge(node(), jobs, elapsed=60)
    assert verdict is not None
    assert verdict.kind == "missing"
    assert "`build`" in verdict.note


def test_a_job_still_running_at_the_wait_s_end_times_out_naming_it() -> None:
    jobs = status(job("test", "passed"), job("e2e", "running"))
    assert judge(node(), jobs, elapsed=599) is None
    verdict = judge(node(), jobs, elapsed=600)
    assert verdict is not None
    assert verdict.kind == "timed_out"
    assert "`e2e`" in verdict.note
