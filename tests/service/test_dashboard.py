"""The web dashboard in a real headless Chromium against a real server: signing in, a
scripted run followed live to its gate, approved in the page and shown with its pull
request; an event stream that drops and resumes with Last-Event-ID; a wrong key; text from
a run shown as text, never run as markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

from tests.blueprint.repos import EXAMPLES, make_remote
from tests.service.dashboard_browser import (  # noqa: F401 - its fixtures
    browser,
    page,
    sign_in,
)
from tests.service.served import Served, fresh_tenant

pytestmark = pytest.mark.bwrap

GATE_BLUEPRINT = Path(__file__).with_name("dashboard_gate.yaml")
SCRIPTED = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
RUN_TIMEOUT = 90_000
"""Milliseconds the page may take to show what a run does (box start, agent, checks)."""


def submit_gated_run(served: Served, key: str, remote: Path) -> str:
    """A scripted run of the gated blueprint; its id."""
    request = {
        "repo": str(remote),
        "task": "Fix the failing tests",
        "model": SCRIPTED,
        "blueprint": str(GATE_BLUEPRINT),
    }
    with served.client(key) as api:
        submitted = api.post("/v1/runs", json=request)
    assert submitted.status_code == 202, submitted.text
    run_id: str = submitted.json()["id"]
    return run_id


def events_until_gate(served: Served, key: str, run_id: str) -> list[tuple[int, str, str]]:
    """The run's events as the API streams them (id, type, data), up to its gate."""
    events: list[tuple[int, str, str]] = []
    fields: dict[str, str] = {}
    with served.client(key) as api, api.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        for line in stream.iter_lines():
            if line:
                name, _, value = line.partition(": ")
                fields[name] = value
                continue
            if "data" in fields:
                events.append((int(fields["id"]), fields["event"], fields["data"]))
            if fields.get("event") == "gate_wait":
                return events
            fields = {}
    raise AssertionError(f"the run ended without reaching its gate: {events}")


def test_a_gated_run_is_followed_live_approved_in_the_page_and_shows_its_pr(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    key = served.tenant_key("acme", "trusted")
    sign_in(page, served, key)
    expect(page.get_by_test_id("runs")).to_contain_text("No runs yet")
    assert key not in page.url
    remote = make_remote(reachable_dir)
    run_id = submit_gated_run(served, key, remote)

    row = page.locator(f"tr[data-run='{run_id}']")
    expect(row).to_contain_text("Fix the failing tests")  # the list refreshes by itself
    row.get_by_role("link").click()
    expect(page.get_by_test_id("run-title")).to_have_text("Fix the failing tests")

    events = page.get_by_test_id("events")
    gate_wait = events.locator("li[data-type='gate_wait']")
    expect(gate_wait).to_contain_text("Ship this change?", timeout=RUN_TIMEOUT)
    expect(events.locator("li[data-type='check']")).to_contain_text("test: passed")
    printed = events.locator("li[data-type='check_output']")  # one block, pieces joined
    expect(printed).to_have_count(1)
    expect(printed.locator("pre")).to_contain_text("test_add (test_calculator.")
    expect(printed.locator("pre")).to_contain_text("\nOK")
    expect(page.get_by_test_id("run-status")).to_have_text("waiting")
    started = events.locator("li[data-type='box_start']").last  # what its box got
    expect(started).to_contain_text("isolation: container (process)")
    expect(page.get_by_test_id("run-isolation")).to_have_text("container (process)")
    expect(page.get_by_test_id("gate-message")).to_have_text("Ship this change?")
    expect(page.get_by_test_id("pr")).to_contain_text("Not opened yet")
    expect(events.locator("li[data-type='run_end']")).to_have_count(0)
    expect(page.get_by_test_id("stream-state")).to_have_text("● live")
    page.evaluate("window.sameDocument = true")  # gone if anything reloaded the page

    page.get_by_role("button", name="Approve").click()

    expect(page.get_by_test_id("run-status")).to_have_text("succeeded", timeout=RUN_TIMEOUT)
    expect(events.locator("li[data-type='gate_decision']")).to_contain_text("approved (by person)")
    expect(events.locator("li[data-type='run_end']")).to_contain_text("ended succeeded · ")
    expect(page.get_by_test_id("gate")).to_be_hidden()
    expect(page.get_by_test_id("stream-state")).to_have_text("The run ended (succeeded).")
    expect(page.get_by_test_id("pr-number")).to_have_text("#1")
    expect(page.get_by_test_id("pr-title")).to_have_text("fix: the failing tests")
    expect(page.get_by_test_id("pr-url")).to_have_text(
        f"golem://local/{str(remote).strip('/')}/pulls/1"
    )
    expect(page.get_by_test_id("checks")).to_contain_text("python3 -m unittest -v")
    expect(page.get_by_test_id("diff")).to_contain_text("+    return a + b")
    expect(page.get_by_test_id("diff")).to_contain_text("-    return a - b")
    expect(page.get_by_test_id("run-summary")).to_contain_text("it now adds them")
    assert page.evaluate("window.sameDocument") is True

    page.get_by_role("link", name="Runs", exact=True).click()
    expect(row).to_contain_text("succeeded")
    expect(row).to_contain_text("#1")

    with served.client(key) as api:
        diff = api.get(f"/v1/runs/{run_id}/diff").json()
    with served.client(served.tenant_key("other", "trusted")) as other:
        assert other.get(f"/v1/runs/{run_id}/diff").status_code == 404
    assert diff["source"] == "pull_request"
    assert "+    return a + b" in diff["diff"]


def test_a_dropped_event_stream_resumes_after_the_last_event_shown(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    key = served.tenant_key("resume", "trusted")
    run_id = submit_gated_run(served, key, make_remote(reachable_dir))
    streamed = events_until_gate(served, key, run_id)
    first = streamed[:3]
    cut = "".join(f"id: {seq}\nevent: {kind}\ndata: {data}\n\n" for seq, kind, data in first)
    asked: list[str | None] = []

    def drop_the_first_stream(route: Route) -> None:
        asked.append(route.request.headers.get("last-event-id"))
        if len(asked) == 1:  # three events, then the connection ends as if it broke
            route.fulfill(status=200, content_type="text/event-stream", body=cut)
        else:
            route.continue_()

    page.route(f"**/v1/runs/{run_id}/events", drop_the_first_stream)
    sign_in(page, served, key)
    page.goto(f"{served.url}/#/runs/{run_id}")
    expect(page.get_by_test_id("stream-state")).to_have_text(
        f"● live (resumed after event {first[-1][0]})", timeout=RUN_TIMEOUT
    )
    events = page.get_by_test_id("events")
    expect(events.locator("li[data-type='gate_wait']")).to_contain_text("Ship this change?")
    assert asked == [None, str(first[-1][0])]
    shown = events.locator("li").evaluate_all("items => items.map(item => +item.dataset.seq)")
    logged = [
        seq
        for seq, kind, data in streamed
        if kind != "agent" or json.loads(data)["event"]["type"] != "model_delta"
    ]
    assert shown == logged  # each event once, in order, none lost at the cut
    with served.client(key) as api:
        assert api.post(f"/v1/runs/{run_id}/cancel").status_code == 200


def test_the_page_is_served_with_a_strict_policy_beside_the_api_docs(served: Served) -> None:
    with served.client() as anonymous:
        page = anonymous.get("/")
        script = anonymous.get("/dashboard/app.js")
        missing = anonymous.get("/dashboard/nothing.js")
        docs = anonymous.get("/docs")
        schema = anonymous.get("/openapi.json")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy
    assert "frame-ancestors 'none'" in policy
    assert script.headers["content-type"].startswith("text/javascript")
    assert 'from "./api.js"' in script.text
    assert missing.status_code == 404
    assert docs.status_code == 200
    paths = schema.json()["paths"]
    assert "/v1/runs/{run_id}/diff" in paths
    assert "/" not in paths


def test_a_wrong_key_is_refused_with_a_clear_message_and_not_kept(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
) -> None:
    sign_in(page, served, "golem_wrong_key")
    expect(page.get_by_role("alert")).to_have_text(
        "That key was not accepted: the API key is not valid, or was revoked."
    )
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0
    assert "golem_wrong_key" not in page.url


def test_text_from_a_run_is_shown_as_text_and_never_runs(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    key = served.tenant_key("mallory", "trusted")
    attack = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    missing = reachable_dir / f"no-such-repo-{attack}"
    with served.client(key) as api:
        submitted = api.post(
            "/v1/runs", json={"repo": str(missing), "task": f"Fix {attack}", "model": SCRIPTED}
        )
    assert submitted.status_code == 202, submitted.text
    run_id = submitted.json()["id"]

    sign_in(page, served, key)
    expect(page.locator(f"tr[data-run='{run_id}']")).to_contain_text(f"Fix {attack}")
    page.goto(f"{served.url}/#/runs/{run_id}")
    expect(page.get_by_test_id("run-title")).to_have_text(f"Fix {attack}")
    expect(page.get_by_test_id("run-status")).to_have_text("failed", timeout=RUN_TIMEOUT)
    expect(page.get_by_test_id("run-error")).to_contain_text(attack)
    expect(page.locator("main img, main script")).to_have_count(0)
    assert page.evaluate("window.pwned") is None


def test_automations_and_goal_loops_are_shown_with_their_next_run_and_status_as_text(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    tenant = fresh_tenant("loopy")
    key = served.key(tenant, "admin")
    attack = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    missing = reachable_dir / f"no-such-repo-{attack}"
    yearly = {
        "name": "yearly-sweep", "tenant": tenant, "repo": str(missing), "cron": "0 0 1 1 *",
        "timezone": "Europe/Berlin", "task": f"Sweep {attack} on {{date}}",
    }  # fmt: skip
    with served.client(key) as api:
        made = api.put("/v1/automations/yearly-sweep", json=yearly)
        asked = {"repo": str(missing), "goal": f"Pass {attack}", "until": "true",
                 "model": SCRIPTED, "max_iterations": 1}  # fmt: skip
        loop = api.post("/v1/loops", json=asked)
    assert made.status_code == 200, made.text
    assert loop.status_code == 202, loop.text
    loop_id = loop.json()["id"]

    sign_in(page, served, key)
    page.get_by_role("link", name="Automations").click()
    row = page.locator("tr[data-automation='yearly-sweep']")
    expect(row).to_contain_text("cron 0 0 1 1 * (Europe/Berlin)")
    expect(row).to_contain_text(str(missing))
    expect(row.locator("td").nth(4)).not_to_have_text("\N{EN DASH}")  # its next run, a slot to come
    looped = page.locator(f"tr[data-loop='{loop_id}']")
    expect(looped).to_contain_text(f"Pass {attack}")
    expect(looped).to_contain_text("/ 1")
    expect(looped.locator(".badge")).to_have_text("stopped", timeout=RUN_TIMEOUT)
    expect(page.locator("main img, main script")).to_have_count(0)
    assert page.evaluate("window.pwned") is None
