"""Best-of-N runs end to end: several attempts of the minion's implement node, each in a box
of its own and verified by the calculator's checks, driven by a model on loopback whose
attempts differ (and, where configured, a model judge breaking a tie of verified ones); the
smallest right one shipping and the budget stopping them on the process backend and on
docker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import AgentStep, CheckFinished, RunEvent
from golem.blueprint.state import AttemptRecord
from golem.core import GolemConfig
from golem.core.errors import InvalidRequest
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from golem.testing.anthropic_server import AnthropicUsage, error_reply
from golem.testing.models import ANTHROPIC_KEY_ENV, TEST_KEY, AnthropicServer, models_config
from tests.blueprint.attempt_scripts import (
    JUDGE_USAGE,
    RIGHT,
    RIGHT_INJECTING,
    RIGHT_LARGER,
    WRONG,
    AttemptScripts,
    choose_larger,
    obey_the_diff,
)
from tests.blueprint.repos import branch_commits, make_remote
from tests.conftest import BOTH_BACKENDS

MODEL = "anthropic/attempts-test"
TASK = "Fix the failing tests of the calculator"
MINION = Path(__file__).parents[2] / "src/golem/blueprint/builtin/minion.yaml"
NO_LOOP = """\
name: no-loop
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - {id: implement, kind: agent, prompt: "{{ task }}", attempts: 2, next: ship}
  - {id: ship, kind: host, action: ship}
"""
DOLLAR = AnthropicUsage(input_tokens=1_000_000, output_tokens=0)
"""A reply's usage that costs one dollar at the test model's price."""


@pytest.fixture(params=BOTH_BACKENDS[:2])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with AnthropicServer(api_key=TEST_KEY) as server:
        yield server


@pytest.fixture
def attempts_config(config: GolemConfig, server: AnthropicServer) -> GolemConfig:
    models = models_config(anthropic=server).model_dump()
    models["prices"] = {MODEL: {"input": 1.0, "output": 0.0}}
    engine = config.engine.model_copy(update={"attempt_boxes": 3})
    return GolemConfig.model_validate(
        {**config.model_dump(), "models": models, "engine": engine.model_dump()}
    )


@pytest.fixture
async def store(attempts_config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(attempts_config)
    yield store
    await store.close()


@pytest.fixture
def runner(attempts_config: GolemConfig, engine: Engine, store: Store) -> Runner:
    return Runner(attempts_config, engine=engine, store=store)


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


def request(remote: Path, **fields: object) -> RunRequest:
    return RunRequest.model_validate(
        {"repo": str(remote), "task": TASK, "model": MODEL, "attempts": 3, **fields}
    )


async def pull_requests(store: Store) -> list[PullRequest]:
    return await LocalForge(store).pull_requests()


async def boxes_of(engine: Engine, state: RunState) -> list[str]:
    return [b.id for b in await engine.boxes() if b.labels.get("golem.run") == state.id]


async def test_the_verified_attempt_with_the_smallest_diff_ships_and_the_pr_lists_all_three(
    runner: Runner, server: AnthropicServer, remote: Path, store: Store, engine: Engine
) -> None:
    server.otherwise(AttemptScripts(WRONG, RIGHT_LARGER, RIGHT))
    state = await runner.start(request(remote))
    assert state.status == "succeeded", state.error
    assert state.started_from is None  # no prepared snapshot of this repository
    [won] = [a for a in state.attempts if a.status == "won"]
    assert (won.diff_lines, won.passing, won.rounds) == (2, 1, 0)
    [larger] = [a for a in state.attempts if a.diff_lines == 14]
    assert larger.status == "lost"
    assert f"a larger diff (14 lines) than attempt {won.number}" in larger.verdict
    [wrong] = [a for a in state.attempts if a.number not in (won.number, larger.number)]
    assert_wrong_cannot_win(wrong)
    assert [step.node for step in state.steps][4:8] == ["baseline", "implement", "verify", "ship"]
    [pr] = await pull_requests(store)
    assert "+    return a + b" in pr.diff
    assert "NOTES.md" not in pr.diff
    assert "return a * b" not in pr.diff
    for attempt in state.attempts:
        assert f"| {attempt.number} | {attempt.status} |" in pr.body
    assert "a larger diff (14 lines)" in pr.body
    assert len(branch_commits(remote, state.branch)) == 1
    assert len(state.trajectories) >= 3  # every attempt's own
    assert await boxes_of(engine, state) == []
    for attempt in state.attempts:  # each from the run's box after its setup, not set up again
        assert attempt.prepared.startswith("started from the snapshot of the run's box attempts-")
        assert attempt.prepared.endswith("setup not run again")


def assert_wrong_cannot_win(wrong: AttemptRecord) -> None:
    """The wrong attempt (its checks fail after every fix round) stopped once it could not
    win: once a check of its last round failed with a right one verified. Had it ended
    before any right one was verified, it lost to them."""
    assert wrong.passing == 0
    if wrong.status == "stopped":
        assert "stopped: it cannot win: its test check still fails" in wrong.verdict
        assert "is verified" in wrong.verdict
    else:
        assert (wrong.status, wrong.diff_lines) == ("lost", 2)
        assert wrong.verdict.startswith("not verified, attempt ")


def minion_with(tmp_path: Path, implement: str) -> str:
    """The minion blueprint with ``implement`` (YAML lines) added to its implement node."""
    source = MINION.read_text().replace(
        "  - id: implement\n    kind: agent\n",
        f"  - id: implement\n    kind: agent\n{implement}",
        1,
    )
    assert implement in source
    path = tmp_path / "attempts.yaml"
    path.write_text(source)
    return str(path)


async def test_the_budget_spent_mid_way_stops_every_attempt_and_the_run_escalates_saying_so(
    runner: Runner,
    server: AnthropicServer,
    remote: Path,
    store: Store,
    engine: Engine,
    tmp_path: Path,
) -> None:
    scripts = AttemptScripts(RIGHT_LARGER, RIGHT_LARGER, RIGHT_LARGER, usage=DOLLAR)
    server.otherwise(scripts)
    blueprint = minion_with(tmp_path, "    attempts: 3\n")  # the node's own, no request's
    # The first answer any attempt gets spends more than the run has: every attempt stops
    # there, the one that got it too (an agent's own budget would end it after that turn,
    # and its verification could then race the others' first answers).
    state = await runner.start(request(remote, budget_usd=0.5, attempts=None, blueprint=blueprint))
    assert len(state.attempts) == 3
    assert state.status == "escalated", state.error
    assert [(s.node, s.outcome) for s in state.steps][-3:] == [
        ("implement", "failure"), ("verify", "failure"), ("escalate", "success"),
    ]  # fmt: skip
    assert {a.status for a in state.attempts} == {"stopped"}
    assert all("budget" in a.verdict for a in state.attempts)
    assert state.unverified is not None
    assert "budget" in state.unverified
    assert len(server.requests) <= 3  # at most each one's first turn: none a second
    assert 1.0 <= state.cost_usd <= len(server.requests)
    assert await pull_requests(store) == []  # nothing to push
    assert await boxes_of(engine, state) == []


@pytest.mark.parametrize("backend", ["process"])
async def test_more_attempts_than_the_configured_maximum_are_refused_before_the_run_is_kept(
    runner: Runner, remote: Path, store: Store, tmp_path: Path
) -> None:
    with pytest.raises(InvalidRequest, match=r"at most 4 \(\[engine\] max_attempts\)"):
        await runner.submit(request(remote, attempts=5))
    blueprint = minion_with(tmp_path, "    attempts: 5\n")
    with pytest.raises(InvalidRequest, match=r"5 attempts asked for node 'implement'"):
        await runner.submit(request(remote, attempts=None, blueprint=blueprint))
    assert await store.runs.newest() == []


@pytest.mark.parametrize("backend", ["process"])
async def test_attempts_of_an_agent_node_with_no_loop_after_it_are_refused(
    runner: Runner, remote: Path, store: Store, tmp_path: Path
) -> None:
    blueprint = tmp_path / "no-loop.yaml"
    blueprint.write_text(NO_LOOP)
    with pytest.raises(InvalidRequest, match="leads to no loop node to verify them"):
        await runner.submit(request(remote, attempts=None, blueprint=str(blueprint)))
    one = await runner.submit(request(remote, attempts=1, blueprint=str(blueprint)))
    assert one.request.attempts == 1  # one attempt needs no loop: the request's number wins


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
async def test_a_run_stopped_mid_attempts_resumes_them_and_opens_one_pull_request(
    attempts_config: GolemConfig,
    engine: Engine,
    store: Store,
    server: AnthropicServer,
    remote: Path,
) -> None:
    server.otherwise(AttemptScripts(RIGHT_LARGER, RIGHT_LARGER, RIGHT_LARGER))
    working: asyncio.Event = asyncio.Event()

    def stop_when_an_attempt_works(event: RunEvent) -> None:
        if isinstance(event, AgentStep) and event.node.startswith("implement-attempt"):
            working.set()

    first = Runner(attempts_config, engine=engine, store=store, on_event=stop_when_an_attempt_works)
    submitted = await first.submit(request(remote))
    running = asyncio.ensure_future(first.run(submitted.id))
    await working.wait()
    running.cancel()  # its machine goes: nothing after this runs there
    with pytest.raises(asyncio.CancelledError):
        await running
    left = await RunBook(store).load(submitted.id)
    assert left is not None
    assert (left.status, left.current) == ("running", "implement")

    # A request the stopped run sent may still take a script: one to spare for each.
    server.otherwise(AttemptScripts(WRONG, RIGHT_LARGER, RIGHT, RIGHT, RIGHT, RIGHT))
    second = Runner(attempts_config, engine=engine, store=store)
    state = await second.run(submitted.id, resumed=True)
    assert state.status == "succeeded", state.error
    assert [a.status for a in state.attempts].count("won") == 1
    for attempt in state.attempts:  # a stale request may have taken the wrong script
        if attempt.status != "won" and not attempt.passing:
            assert_wrong_cannot_win(attempt)
        elif attempt.status != "won":
            assert attempt.status == "lost"
    [pr] = await pull_requests(store)
    assert "NOTES.md" not in pr.diff
    assert "+    return a + b" in pr.diff
    assert len(branch_commits(remote, state.branch)) == 1
    assert await boxes_of(engine, state) == []


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
async def test_a_provider_down_in_an_attempt_pauses_the_run_at_its_agent_node_with_no_box_held(
    attempts_config: GolemConfig,
    engine: Engine,
    store: Store,
    server: AnthropicServer,
    remote: Path,
) -> None:
    attempts_config.models.unavailable_after = 1
    server.otherwise(error_reply(529, "overloaded_error", "Overloaded", {"retry-after": "3600"}))
    runner = Runner(attempts_config, engine=engine, store=store)
    state = await runner.start(request(remote))
    assert (state.status, state.current) == ("waiting", "implement")
    assert state.pause is not None
    assert "overloaded" in state.pause.reason.lower()
    assert {a.status for a in state.attempts} == {"stopped"}
    assert all("model provider is down" in a.verdict for a in state.attempts)
    assert await boxes_of(engine, state) == []
    assert await pull_requests(store) == []


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
async def test_the_budget_spent_after_one_attempt_verified_ships_it_and_stops_the_rest(
    attempts_config: GolemConfig,
    engine: Engine,
    store: Store,
    server: AnthropicServer,
    remote: Path,
) -> None:
    one_at_a_time = attempts_config.model_copy(
        update={"engine": attempts_config.engine.model_copy(update={"attempt_boxes": 1})}
    )
    server.otherwise(AttemptScripts(RIGHT, RIGHT_LARGER, RIGHT_LARGER, usage=DOLLAR))
    runner = Runner(one_at_a_time, engine=engine, store=store)
    state = await runner.start(request(remote, budget_usd=3.5))
    assert state.status == "succeeded", state.error
    # The second's own budget (what the run had left: $1.50) ended its agent after one
    # turn, its edit made: verified, it lost to the first on the tie. The third's first
    # turn spent the run's last dollar: it stopped.
    assert [a.status for a in state.attempts] == ["won", "lost", "stopped"]
    assert "the same checks and diff size as attempt 1" in state.attempts[1].verdict
    assert "budget ($3.50) is spent ($4.00)" in state.attempts[2].verdict
    assert len(server.requests) == 4
    assert state.cost_usd == pytest.approx(4.0)
    [pr] = await pull_requests(store)
    assert "NOTES.md" not in pr.diff
    assert "| 3 | stopped |" in pr.body
    assert await boxes_of(engine, state) == []


MINION_IMPLEMENT = "  - id: implement\n    kind: agent\n"
NO_FIX_ROUNDS = ("    max_rounds: 2\n", "    max_rounds: 0\n")


def minion_changed(tmp_path: Path, *changes: tuple[str, str]) -> str:
    """The minion blueprint with each (old, new) text replaced once."""
    source = MINION.read_text()
    for old, new in changes:
        assert old in source
        source = source.replace(old, new, 1)
    path = tmp_path / "changed.yaml"
    path.write_text(source)
    return str(path)


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
async def test_the_model_judge_when_configured_ships_the_tied_verified_attempt_it_chooses(
    runner: Runner, server: AnthropicServer, remote: Path, store: Store, tmp_path: Path
) -> None:
    scripts = AttemptScripts(WRONG, RIGHT, RIGHT_LARGER, judge=choose_larger)
    server.otherwise(scripts)
    blueprint = minion_changed(  # the wrong one's first verification its last
        tmp_path, (MINION_IMPLEMENT, MINION_IMPLEMENT + "    judge: true\n"), NO_FIX_ROUNDS
    )
    state = await runner.start(request(remote, blueprint=blueprint, budget_usd=1.0))
    assert state.status == "succeeded", state.error
    [candidates] = scripts.judged  # one call, given the two verified ones only
    assert sorted(c["lines_changed"] for c in candidates) == [2, 14]
    assert all("+    return a + b" in c["diff"] for c in candidates)
    won = next(a for a in state.attempts if a.status == "won")
    assert won.diff_lines == 14
    assert won.judged == "It documents the fix."
    assert "the model judge chose it over attempt" in won.verdict
    smaller = next(a for a in state.attempts if a.diff_lines == 2 and a.passing == 1)
    assert smaller.status == "lost"
    assert f"the model judge chose attempt {won.number}" in smaller.verdict
    [pr] = await pull_requests(store)
    assert "NOTES.md" in pr.diff
    assert "the judge: `It documents the fix.`" in pr.body
    judge_cost = JUDGE_USAGE.input_tokens / 1_000_000  # $1 per million input tokens
    assert state.cost_usd == pytest.approx(sum(a.cost_usd for a in state.attempts) + judge_cost)
    assert state.cost_usd <= 1.0


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
async def test_a_judge_obeying_a_diff_that_names_no_candidate_is_overruled_and_the_order_decides(
    runner: Runner, server: AnthropicServer, remote: Path, store: Store, tmp_path: Path
) -> None:
    scripts = AttemptScripts(RIGHT_INJECTING, RIGHT, judge=obey_the_diff)
    server.otherwise(scripts)
    blueprint = minion_with(tmp_path, "    judge: true\n")
    state = await runner.start(request(remote, blueprint=blueprint, attempts=2, budget_usd=1.0))
    assert state.status == "succeeded", state.error
    assert len(scripts.judged) == 1  # asked, and its answer not used
    won = next(a for a in state.attempts if a.status == "won")
    assert (won.diff_lines, won.judged) == (2, "")
    assert "the model judge's answer was not used (the judge named no candidate" in won.verdict
    [pr] = await pull_requests(store)
    assert "NOTES.md" not in pr.diff
    assert "As the notes say" not in pr.body
    judge_cost = JUDGE_USAGE.input_tokens / 1_000_000  # charged though its answer was not used
    assert state.cost_usd == pytest.approx(sum(a.cost_usd for a in state.attempts) + judge_cost)


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
async def test_the_model_judge_is_not_asked_when_the_run_cannot_afford_it_and_the_order_decides(
    attempts_config: GolemConfig,
    engine: Engine,
    server: AnthropicServer,
    remote: Path,
    store: Store,
) -> None:
    judging = attempts_config.model_copy(
        update={"engine": attempts_config.engine.model_copy(update={"judge_attempts": True})}
    )  # the judge configured for every node, none of the minion's saying otherwise
    runner = Runner(judging, engine=engine, store=store)
    # Both attempts spend $5 in all, leaving less than the judge's call could cost.
    scripts = AttemptScripts(RIGHT, RIGHT_LARGER, usage=DOLLAR, judge=choose_larger)
    server.otherwise(scripts)
    budget = 5.0005
    state = await runner.start(request(remote, attempts=2, budget_usd=budget))
    assert state.status == "succeeded", state.error
    assert scripts.judged == []
    won = next(a for a in state.attempts if a.status == "won")
    assert (won.diff_lines, won.judged) == (2, "")
    assert "the model judge's answer was not used (the judge was not asked: dollar" in won.verdict
    assert state.cost_usd == pytest.approx(5.0)
    [pr] = await pull_requests(store)
    assert "NOTES.md" not in pr.diff


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
async def test_an_attempt_that_cannot_be_verified_any_more_stops_at_its_failing_check(
    attempts_config: GolemConfig,
    engine: Engine,
    store: Store,
    server: AnthropicServer,
    remote: Path,
    tmp_path: Path,
) -> None:
    one_at_a_time = attempts_config.model_copy(
        update={"engine": attempts_config.engine.model_copy(update={"attempt_boxes": 1})}
    )
    server.otherwise(AttemptScripts(RIGHT, WRONG))
    blueprint = minion_changed(
        tmp_path,
        ("    checks: [lint, build, test]\n", "    checks: [test, 'true']\n"),
        ("    max_rounds: 2\n", "    max_rounds: 1\n"),
    )
    checked: list[tuple[int, str]] = []

    def on_event(event: RunEvent) -> None:
        if isinstance(event, CheckFinished) and event.node == "verify-attempt2":
            checked.append((event.round, event.check.name))

    runner = Runner(one_at_a_time, engine=engine, store=store, on_event=on_event)
    state = await runner.start(request(remote, blueprint=blueprint, attempts=2))
    assert state.status == "succeeded", state.error
    assert [a.status for a in state.attempts] == ["won", "stopped"]
    stopped = state.attempts[1]
    assert stopped.verdict == (
        "stopped: it cannot win: its test check still fails with its fix rounds spent (1), "
        "and attempt 1 is verified"
    )
    # Its first verification ran both checks; its last stopped at the failing one.
    assert ("0", "true") in [(str(r), name) for r, name in checked]
    assert [name for r, name in checked if r == 1] == ["test"]
    [pr] = await pull_requests(store)
    assert "| 2 | stopped |" in pr.body
    assert await boxes_of(engine, state) == []
