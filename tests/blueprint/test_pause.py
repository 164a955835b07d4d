"""A run whose model provider stays down is paused, not failed, in real boxes against the
Anthropic wire server: its work is kept (the agent's conversation, the checkout, what it
spent), it resumes from there (here by `golem runs resume`'s path, an hour later), and
the hour it waited counts against no wall-clock budget and no dollar twice."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.agent.events import AgentStarted
from golem.agent.messages import Usage
from golem.agent.models import cost_usd, price_for
from golem.agent.models.limiter import LimitState, limit_key
from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.control import cancel_run
from golem.blueprint.events import AgentStep, RunPaused
from golem.blueprint.state import Pause
from golem.core import GolemConfig
from golem.core.model_config import ModelsConfig
from golem.sandbox import Engine
from golem.store import MemoryStore, SqlStore
from golem.testing.anthropic_server import Text, ToolUse, error_reply, stream_reply
from golem.testing.models import ANTHROPIC_KEY_ENV, TEST_KEY, AnthropicServer, models_config
from tests.agent.pressure import FIX
from tests.blueprint.repos import make_remote

pytestmark = pytest.mark.bwrap

MODEL = "anthropic/claude-haiku-4-5"
BLUEPRINT = """
name: paused
budget: {wall_seconds: 600}
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - id: implement
    kind: agent
    prompt: "{{ task }}"
    tools: [all]
    budget: {turns: 5, wall_seconds: 300}
    next: {success: polish, failure: escalate}
  - id: polish
    kind: agent
    prompt: "Polish it."
    tools: [finish]
    next: {success: ship, failure: escalate}
  - {id: ship, kind: host, action: ship, next: {success: end, failure: escalate}}
  - {id: escalate, kind: host, action: escalate}
"""
HOUR = 3600.0


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with AnthropicServer(api_key=TEST_KEY) as server:
        yield server


def an_hour_earlier(document: str | None) -> tuple[str | None, bool]:
    """The limiter's record as the provider's hold left it an hour ago."""
    state = LimitState.model_validate_json(document or "{}")
    assert state.header == "retry-after: 3600"
    return state.model_copy(update={"not_before": state.not_before - HOUR}).model_dump_json(), True


def one_reply() -> float:
    price = price_for(MODEL, ModelsConfig())
    assert price is not None
    return cost_usd(Usage(input_tokens=10, output_tokens=5), price)


async def test_a_run_paused_for_an_hour_goes_on_from_its_conversation_within_its_budgets(
    config: GolemConfig,
    engine: Engine,
    anthropic: AnthropicServer,
    reachable_dir: Path,
    tmp_path: Path,
) -> None:
    config.models = models_config(anthropic=anthropic)
    config.models.unavailable_after = 1
    blueprint = tmp_path / "paused.yaml"
    blueprint.write_text(BLUEPRINT)
    finish = ToolUse("finish", {"summary": "add() adds now."})
    anthropic.push(
        stream_reply(Text("Fixing add()."), ToolUse("edit", FIX)),
        error_reply(529, "overloaded_error", "Overloaded", {"retry-after": "3600"}),
    )
    request = RunRequest(
        repo=str(make_remote(reachable_dir)), task="Fix add()", blueprint=str(blueprint),
        model=MODEL, budget_usd=1.0,
    )  # fmt: skip
    store = await SqlStore.open(config)
    try:
        book = RunBook(store)
        paused = await Runner(config, engine=engine, store=store).start(request)

        assert (paused.status, paused.current) == ("waiting", "implement")
        assert paused.pause is not None
        assert paused.pause.step is not None
        assert "overloaded" in paused.pause.reason.lower()
        assert paused.pause.resume_at == pytest.approx(time.time() + HOUR, abs=120)
        assert (paused.pause.step.turns, paused.turns) == (1, 1)
        assert paused.cost_usd == pytest.approx(one_reply())  # what it spent is charged
        assert paused.steps[-1].node == "prepare"  # implement is not over
        held = [box.id for box in await engine.boxes() if box.labels.get("golem.run") == paused.id]
        assert held == []  # no box held while it waits
        events = [event for _, event in await book.events(paused.id)]
        assert [e.node for e in events if isinstance(e, RunPaused)] == ["implement"]

        # An hour later, the provider is back: the run goes on where it stopped.
        assert paused.pause is not None
        paused.pause.since -= HOUR
        paused.pause.node_started -= HOUR
        await book.save(paused)
        key = limit_key("anthropic", anthropic.base_url, TEST_KEY)
        await store.limits.update(key, an_hour_earlier)
        anthropic.push(stream_reply(finish), stream_reply(finish))
        ended = await Runner(config, engine=engine, store=store).resume(paused.id)
        events = [event for _, event in await book.events(paused.id)]
    finally:
        await store.close()

    assert ended.status in ("succeeded", "unverified"), ended.error
    assert ended.pr is not None
    implement = next(step for step in ended.steps if step.node == "implement")
    assert implement.outcome == "success"
    assert implement.paused >= HOUR  # counted against no wall-clock budget: polish ran
    assert implement.cost_usd == pytest.approx(2 * one_reply())  # before the pause too
    assert [step.node for step in ended.steps] == ["prepare", "implement", "polish", "ship"]
    # The conversation went on: the call after the pause carried the first turn and its
    # result, and nothing was charged twice.
    resumed_call = str(anthropic.requests[2].json["messages"])
    assert "'tool_use'" in resumed_call
    assert "'tool_result'" in resumed_call
    assert "+    return a + b" in ended.pr.diff  # the edit made before the pause shipped
    assert ended.cost_usd == pytest.approx(3 * one_reply())
    assert ended.turns == 3
    starts = [e.event for e in events if isinstance(e, AgentStep) and e.node == "implement"]
    assert [s.resumed for s in starts if isinstance(s, AgentStarted)] == [False, True]


LOOP = """
name: paused-fix
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - {id: implement, kind: agent, prompt: "{{ task }}", tools: [all], next: verify}
  - id: verify
    kind: loop
    checks: [test]
    max_rounds: 1
    fix: {prompt: "Fix: {{ failures }}", tools: [all]}
    next: {success: ship, failure: escalate}
  - {id: ship, kind: host, action: ship, next: {success: end, failure: escalate}}
  - {id: escalate, kind: host, action: escalate}
"""


async def test_a_fix_round_paused_goes_on_as_the_same_round_without_verifying_again(
    config: GolemConfig,
    engine: Engine,
    anthropic: AnthropicServer,
    reachable_dir: Path,
    tmp_path: Path,
) -> None:
    config.models = models_config(anthropic=anthropic)
    config.models.unavailable_after = 1
    config.models.resume_after = 0.01
    blueprint = tmp_path / "paused-fix.yaml"
    blueprint.write_text(LOOP)
    finish = ToolUse("finish", {"summary": "add() adds now."})
    anthropic.push(
        stream_reply(ToolUse("finish", {"summary": "Nothing to do, I think."})),
        error_reply(529, "overloaded_error", "Overloaded", {"retry-after-ms": "1"}),
    )
    request = RunRequest(
        repo=str(make_remote(reachable_dir)), task="Fix add()", blueprint=str(blueprint),
        model=MODEL,
    )  # fmt: skip
    store = await SqlStore.open(config)
    try:
        paused = await Runner(config, engine=engine, store=store).start(request)
        assert (paused.status, paused.current, paused.rounds) == ("waiting", "verify", 1)
        assert paused.pause is not None
        assert paused.pause.step is not None
        assert paused.pause.step.name == "verify"
        checks_before = len([e for _, e in await RunBook(store).events(paused.id)
                             if e.type == "check"])  # fmt: skip

        anthropic.push(stream_reply(Text("Fixing."), ToolUse("edit", FIX), finish))
        ended = await Runner(config, engine=engine, store=store).resume(paused.id)
        checks = [e for _, e in await RunBook(store).events(paused.id) if e.type == "check"]
    finally:
        await store.close()

    assert ended.status == "succeeded", ended.error
    assert ended.rounds == 1  # the paused round went on: no round lost, none added
    assert len(checks) == checks_before + 1  # verified once more: after the fix, not before
    fix_call = str(anthropic.requests[-1].json["messages"])
    assert "Fix: " in fix_call  # the fix round's own conversation went on


async def test_a_paused_run_cancelled_over_the_api_ends_at_once_and_never_resumes() -> None:
    store = MemoryStore(tenant=None)
    book = RunBook(store.for_tenant("acme"))
    now = time.time()
    state = RunState(
        id="run-paused", request=RunRequest(repo="/nowhere", task="x"), blueprint="b",
        blueprint_source="", status="waiting", current="implement",
        pause=Pause(node="implement", reason="529 overloaded_error", since=now,
                    resume_at=now + HOUR, node_started=now),
    )  # fmt: skip
    await book.create(state)
    await book.save(state)

    cancelled = await cancel_run(book, state.id)  # as the API does: no engine

    assert cancelled.status == "cancelled"
    assert [event.type for _, event in await book.events(state.id)] == ["run_end"]
    assert await store.queue.resume_due(now + 2 * HOUR) == []
