"""The dashboard's run page says why a run is not verified and each check's result in
words: the reason of a kill, flaky, failing on the base too, the failing tests, and a box
preparation that failed."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from golem.blueprint import RunBook, RunRequest, RunState
from golem.blueprint.state import AttemptRecord, CIRound, NodeRecord
from golem.checks import CheckResult
from golem.store import SqlStore
from tests.blueprint.outcomes import OOM, with_outcomes
from tests.cli.stored_runs import new_run
from tests.service.dashboard_browser import (  # noqa: F401 - the fixtures of the dashboard tests
    browser,
    page,
    sign_in,
)
from tests.service.served import Served, fresh_tenant

pytestmark = pytest.mark.bwrap


def keep(served: Served, tenant: str, state: RunState) -> None:
    """Put ``state`` in ``tenant``'s runs in the server's store."""

    async def create() -> None:
        store = await SqlStore.connect(f"sqlite:///{Path(served.state_dir) / 'golem.db'}")
        try:
            await RunBook(store.for_tenant(tenant)).create(state)
        finally:
            await store.close()

    with ThreadPoolExecutor(1) as other:  # Playwright's sync API holds this thread's loop
        other.submit(asyncio.run, create()).result()


def test_the_run_page_shows_why_it_is_unverified_and_each_checks_reason(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
) -> None:
    tenant = fresh_tenant("viewer")
    key = served.key(tenant)
    keep(served, tenant, with_outcomes(new_run("run-results", status="unverified")))
    sign_in(page, served, key)
    page.goto(f"{served.url}/#/runs/run-results")
    expect(page.get_by_test_id("run-status")).to_have_text("unverified")
    expect(page.get_by_test_id("run-unverified")).to_have_text("no check ran on the change")
    checks = page.get_by_test_id("checks")
    expect(page.get_by_test_id("check-setup")).to_contain_text(f"failed ({OOM})")
    expect(page.get_by_test_id("check-test")).to_contain_text(f"failed ({OOM})")
    expect(page.get_by_test_id("check-test")).to_contain_text("tests/test_calc.py::test_add")
    expect(page.get_by_test_id("check-lint")).to_contain_text("fails on the base commit too")
    expect(page.get_by_test_id("check-build")).to_contain_text("flaky (failed, then passed)")
    expect(checks).not_to_contain_text("uv sync")  # the install passed: not shown


def test_the_run_page_shows_each_ci_round_and_each_steps_cost(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
) -> None:
    tenant = fresh_tenant("viewer")
    key = served.key(tenant)
    steps = [
        NodeRecord(node="ci", kind="ci", outcome="success", started=2.0, ended=62.0,
                   detail="CI passed", cost_usd=0.0421),
    ]  # fmt: skip
    rounds = [
        CIRound(round=0, commit="a" * 40, started=2.0, ended=32.0, verdict="failed",
                failing=["test"], cost_usd=0.0421),
        CIRound(round=1, commit="b" * 40, started=40.0, ended=62.0, verdict="passed"),
    ]  # fmt: skip
    keep(served, tenant, new_run("run-ci", status="succeeded", steps=steps, ci=rounds))
    sign_in(page, served, key)
    page.goto(f"{served.url}/#/runs/run-ci")
    expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
    expect(page.get_by_test_id("steps")).to_contain_text("$0.0421")
    expect(page.get_by_test_id("ci-round-0")).to_contain_text("aaaaaaaaaaaa")
    expect(page.get_by_test_id("ci-round-0")).to_contain_text("failed")
    expect(page.get_by_test_id("ci-round-0")).to_contain_text("test")
    expect(page.get_by_test_id("ci-round-0")).to_contain_text("30s")
    expect(page.get_by_test_id("ci-round-0")).to_contain_text("$0.0421")
    expect(page.get_by_test_id("ci-round-1")).to_contain_text("passed")


def test_the_run_page_of_a_follow_up_links_the_run_that_opened_its_pull_request(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
) -> None:
    tenant = fresh_tenant("viewer")
    key = served.key(tenant)
    asked = {"repo": "octo/calc", "number": 7, "parent_run": "run-parent"}
    request = RunRequest.model_validate({"repo": "/srv/repo", "follow_up": asked})
    keep(served, tenant, new_run("run-parent", status="succeeded"))
    keep(served, tenant, new_run("run-child", status="running", request=request))
    sign_in(page, served, key)
    page.goto(f"{served.url}/#/runs/run-child")
    link = page.get_by_test_id("run-follow-up")
    expect(link).to_have_text("run-parent on octo/calc#7")
    link.get_by_role("link", name="run-parent").click()
    expect(page).to_have_url(f"{served.url}/#/runs/run-parent")


def test_the_run_page_shows_a_runs_attempts_side_by_side(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
) -> None:
    tenant = fresh_tenant("viewer")
    key = served.key(tenant)
    test = CheckResult(name="test", command="pytest", exit_code=0, passed=True, duration=1.0)
    failing = test.model_copy(update={"exit_code": 1, "passed": False})
    attempts = [
        AttemptRecord(number=1, status="lost", checks=[failing], diff_lines=2, cost_usd=0.0123,
                      verdict="not verified, attempt 2 was"),
        AttemptRecord(number=2, status="won", checks=[test], diff_lines=2, cost_usd=0.0456,
                      verdict="verified: 1 of 1 checks passed, 2 lines changed",
                      judged="<i>the model's own words</i>"),
        AttemptRecord(number=3, status="lost", checks=[test], diff_lines=14, cost_usd=0.0789,
                      verdict="<b>a larger diff (14 lines) than attempt 2 (2)</b>"),
    ]  # fmt: skip
    keep(served, tenant, new_run("run-attempts", status="succeeded", attempts=attempts))
    sign_in(page, served, key)
    page.goto(f"{served.url}/#/runs/run-attempts")
    expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
    rows = [page.get_by_test_id(f"attempt-{n}") for n in (1, 2, 3)]
    expect(rows[0]).to_contain_text("lost0 of 12$0.0123not verified, attempt 2 was")
    expect(rows[1]).to_contain_text("won1 of 12$0.0456verified")
    expect(rows[2]).to_contain_text("<b>a larger diff (14 lines) than attempt 2 (2)</b>")
    expect(rows[1]).to_contain_text("changed; the judge: <i>the model's own words</i>")
    expect(page.get_by_test_id("attempts").locator("b")).to_have_count(0)  # text, not markup
    expect(page.get_by_test_id("attempts").locator("i")).to_have_count(0)
