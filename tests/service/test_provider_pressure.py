"""Model providers under pressure, through a real `golem serve` whose runs reach a local
server speaking the provider's wire protocol (Anthropic's, OpenAI's) with the official
SDKs: a limit of N requests per window that 20 parallel runs must share, and a provider
that goes down for longer than ``[models] unavailable_after`` while runs work."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from golem.agent.messages import Usage
from golem.agent.models import cost_usd, price_for
from golem.blueprint import RunBook
from golem.core import GolemConfig
from golem.core.model_config import ModelsConfig
from golem.store import SqlStore
from golem.testing.models import TEST_KEY, AnthropicServer, OpenAIServer, WireServer
from tests.agent.pressure import Dialect, Pressure, anthropic_dialect, openai_dialect
from tests.blueprint.repos import make_remote
from tests.service.served import Served, launch, serving

pytestmark = pytest.mark.bwrap

BLUEPRINT = Path(__file__).with_name("pressure.yaml")
KEY_ENV = "GOLEM_TEST_PROVIDER_KEY"
RUNS = 20
LIMIT, WINDOW = 4, 0.25  # requests per window of seconds
BUDGET = 0.05  # dollars per run
Event = tuple[str, dict[str, object]]
CHROMIUM = Path("/usr/bin/chromium")
HOUR = 3600
PAGE = 60_000  # milliseconds the dashboard may take to show a paused run


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[Dialect, WireServer, str]]:
    """A provider's dialect, its wire server (requiring TEST_KEY) and a model of it."""
    if request.param == "anthropic":
        with AnthropicServer(api_key=TEST_KEY) as anthropic:
            yield anthropic_dialect(), anthropic, "anthropic/claude-haiku-4-5"
    else:
        with OpenAIServer(api_key=TEST_KEY) as openai:
            yield openai_dialect(), openai, "openai/gpt-5-mini"


def config(dialect: Dialect, wire: WireServer, models: str = "", retries: str = "") -> str:
    """golem.toml for a server whose runs reach ``wire`` (as the provider of ``dialect``)."""
    base_url = wire.base_url if isinstance(wire, AnthropicServer | OpenAIServer) else wire.url
    return (
        f"[server]\nmax_runs = {RUNS}\n\n[models]\n{models}\n"
        f'[models.{dialect.name}]\nbase_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\n'
        f"{retries}"
    )


def follow(client: httpx.Client, run_id: str, until: Callable[[Event], bool]) -> list[Event]:
    """The run's events, until the first one ``until`` accepts (or the stream's end)."""
    seen: list[Event] = []
    kind = ""
    with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if line.startswith("event:"):
                kind = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                seen.append((kind, json.loads(line.removeprefix("data:"))))
                if until(seen[-1]):
                    break
    return seen


def ended(event: Event) -> bool:
    return event[0] == "run_end"


def calling(event: Event) -> bool:
    """An agent's model call went out (or waits to)."""
    inner = event[1].get("event")
    return event[0] == "agent" and isinstance(inner, dict) and inner["type"] == "model_request"


def paused(event: Event) -> bool:
    return event[0] == "run_paused"


def submit(client: httpx.Client, remote: Path, model: str) -> str:
    made = client.post(
        "/v1/runs",
        json={"repo": str(remote), "task": "Fix add()", "model": model,
              "blueprint": str(BLUEPRINT), "budget_usd": BUDGET},
    )  # fmt: skip
    assert made.status_code == 202, made.text
    run_id: str = made.json()["id"]
    return run_id


def one_reply_costs(model: str) -> float:
    """What one of the wire server's replies costs (its default usage, the model's price)."""
    price = price_for(model, ModelsConfig())
    assert price is not None
    return cost_usd(Usage(input_tokens=10, output_tokens=5), price)  # both servers' default


def test_twenty_parallel_runs_share_one_limiter_and_stay_under_the_providers_limit(
    provider: tuple[Dialect, WireServer, str], reachable_dir: Path, tmp_path: Path
) -> None:
    dialect, wire, model = provider
    pressure = Pressure(dialect, limit=LIMIT, window=WINDOW)
    pressure.down = True  # overloaded (retry-after: 1) until every run waits for it
    wire.otherwise(pressure)
    remote = make_remote(reachable_dir)
    toml = config(dialect, wire, retries="max_retries = 100\n")
    with (
        serving(tmp_path / "state", config=toml, env={KEY_ENV: TEST_KEY}) as served,
        served.client(served.key("acme", "trusted")) as client,
    ):
        runs = [submit(client, remote, model) for _ in range(RUNS)]
        for run_id in runs:
            follow(client, run_id, calling)
        pressure.down = False  # back: twenty calls want to go at once
        ends = [follow(client, run_id, ended)[-1] for run_id in runs]
        states = [client.get(f"/v1/runs/{run_id}").json() for run_id in runs]

    assert [kind for kind, _ in ends] == ["run_end"] * RUNS
    assert all(state["pr"] is not None for state in states), [s["error"] for s in states]
    assert all(state["cost_usd"] <= BUDGET for state in states)
    # What the provider saw: never more than its limit in a window (the outage included),
    # every call answered once and charged once (a refused or retried one costs nothing).
    assert max(pressure.per_window.values()) <= LIMIT, sorted(pressure.per_window.items())
    assert pressure.answered == RUNS
    total = sum(state["cost_usd"] for state in states)
    assert total == pytest.approx(RUNS * one_reply_costs(model))


def test_runs_whose_provider_stays_down_pause_and_resume_to_a_pull_request_after_a_restart(
    provider: tuple[Dialect, WireServer, str], reachable_dir: Path, tmp_path: Path
) -> None:
    dialect, wire, model = provider
    pressure = Pressure(dialect, limit=100, window=60)
    pressure.down, pressure.down_retry_after = True, HOUR  # back in an hour, it says
    wire.otherwise(pressure)
    remote = make_remote(reachable_dir)
    toml = config(dialect, wire, "unavailable_after = 1\nresume_after = 0.2\n")
    state_dir = tmp_path / "state"
    first = launch(state_dir, config=toml, env={KEY_ENV: TEST_KEY})
    try:
        with first.client(first.key("default", "trusted")) as client:
            runs = [submit(client, remote, model) for _ in range(3)]
            pauses = [follow(client, run_id, paused)[-1][1] for run_id in runs]
            states = [client.get(f"/v1/runs/{run_id}").json() for run_id in runs]
    finally:
        first.stop()
    shown = runs_show(first, runs[0])  # the store as the stopped server left it

    for event, state in zip(pauses, states, strict=True):
        assert event["node"] == "implement"
        assert "overloaded" in str(event["reason"]).lower()
        assert state["status"] == "waiting"
        assert state["pause"]["reason"] == event["reason"]
        assert state["pause"]["resume_at"] == event["resume_at"]
    assert "waiting" in shown
    assert "paused at implement" in shown
    assert "verloaded" in shown

    # The hour passes while no server runs (the runs' resume times moved, no sleep); the
    # provider now says it is back in a second.
    asyncio.run(resume_now(state_dir, runs))
    pressure.down_retry_after = 1
    # A new server resumes them at their time (still down: paused again, as its dashboard
    # shows), then the provider is back and they go on to their pull requests.
    second = launch(state_dir, config=toml, admin_key=first.admin_key, env={KEY_ENV: TEST_KEY})
    try:
        with second.client(second.key("default", "trusted")) as client:
            dashboard_shows_the_pause(second, second.key("default", "user"), runs[0])
            pressure.down = False
            ends = [follow(client, run_id, ended)[-1][1] for run_id in runs]
            finals = [client.get(f"/v1/runs/{run_id}").json() for run_id in runs]
    finally:
        second.stop()
    assert [end["status"] for end in ends] == [state["status"] for state in finals]
    for final, event in zip(finals, pauses, strict=True):
        assert final["pr"] is not None, final["error"]
        implement = next(step for step in final["steps"] if step["node"] == "implement")
        assert implement["outcome"] == "success"
        assert implement["started"] < float(str(event["time"])) < implement["ended"]
        assert implement["paused"] > 0  # the pause counted against no wall-clock budget
        assert final["cost_usd"] == pytest.approx(one_reply_costs(model))


async def resume_now(state_dir: Path, run_ids: list[str]) -> None:
    """The hour passes while no server runs: the paused runs' resume times (through the
    store) and the provider's limiter's hold move to now."""
    now = time.time()
    store = await SqlStore.open(GolemConfig(state_dir=state_dir), tenant="default")
    try:
        book = RunBook(store)
        for run_id in run_ids:
            state = await book.load(run_id)
            assert state is not None
            assert state.pause is not None
            state.pause.resume_at = now
            await book.save(state, touch=False)
    finally:
        await store.close()
    # The limiter remembers the provider's "back in an hour" too: that hour has passed.
    with contextlib.closing(sqlite3.connect(state_dir / "golem.db")) as db, db:
        changed = db.execute(
            "UPDATE provider_limits SET document = json_set(document, '$.not_before', ?) "
            "WHERE document IS NOT NULL",
            (now,),
        ).rowcount
    assert changed == 1  # one provider, one key: one limiter


def dashboard_shows_the_pause(served: Served, key: str, run_id: str) -> None:
    """The run's page says it waits, why, and that it resumes by itself; its event log has
    the pause."""
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed (scripts/setup installs Debian's chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(served.url + "/")
            page.get_by_label("API key").fill(key)
            page.get_by_role("button", name="Sign in").click()
            page.goto(f"{served.url}/#/runs/{run_id}")
            expect(page.get_by_test_id("run-status")).to_have_text("waiting", timeout=PAGE)
            pause = page.get_by_test_id("run-pause")
            expect(pause).to_contain_text("resumes by itself", timeout=PAGE)
            expect(pause).to_contain_text("verloaded")
            logged = page.get_by_test_id("events").locator("li[data-type='run_paused']")
            expect(logged.first).to_contain_text("paused at implement", timeout=PAGE)
        finally:
            browser.close()


def runs_show(served: Served, run_id: str) -> str:
    """What `golem runs show` prints of a run of the default tenant (it reads the server's
    store)."""
    shown = subprocess.run(
        [sys.executable, "-m", "golem", "runs", "show", run_id],
        env=served.env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return shown.stdout
