"""A real `golem serve` whose store goes away: a private PostgreSQL cluster stopped or frozen
(SIGSTOP), a SQLite file locked by another connection. Calls that need the store answer 503
with Retry-After within the store's timeout, /healthz says degraded, a run in progress ends
once the store is back (not `running` forever), the workers claim again, an SSE stream ends
with an `error` event, and SIGTERM during an outage still removes every box. Two servers
sharing a store never accept a run past the store's cap, and a run its runner cannot start
ends failed with the reason."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.core.ids import new_id
from golem.store import SqlStore
from tests.blueprint.repos import make_remote
from tests.faultdb import PrivatePostgres, SqliteLock, pg_binaries, private_postgres, wait_until
from tests.service.api_runs import agent_working, boxes, follow, submit
from tests.service.served import Served, serving

pytestmark = pytest.mark.skipif(pg_binaries() is None, reason="no PostgreSQL installed")

OUTAGE = Path(__file__).with_name("outage.yaml")
SLOW = Path(__file__).parents[1] / "blueprint" / "scripts" / "slow.yaml"
GATED = Path(__file__).with_name("dashboard_gate.yaml")
FIX = f"scripted:{Path(__file__).parents[2] / 'examples' / 'calculator-fix.yaml'}"
TIMEOUT = 2  # the servers' database_timeout
CONFIG = f"database_timeout = {TIMEOUT}\n"
WRITE_WAITS = "the run's write waits for it"  # the server's log, a write that met the outage
BOUND = TIMEOUT * 3 + 5  # a call given up on by the server, with room for a slow machine


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


@pytest.fixture
def cluster() -> Iterator[PrivatePostgres]:
    with private_postgres() as pg:
        yield pg


@pytest.fixture
def on_postgres(tmp_path: Path, cluster: PrivatePostgres) -> Iterator[Served]:
    env = {"GOLEM_DATABASE_URL": cluster.url}
    with serving(tmp_path / "state", config=CONFIG, env=env) as server:
        yield server


def bounded(served: Served, key: str | None = None) -> httpx.Client:
    """A client that gives up after ``BOUND`` seconds (a server that hangs fails the test)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=served.url, headers=headers, timeout=BOUND)


def health(served: Served) -> dict[str, object]:
    with bounded(served) as anyone:
        answer = anyone.get("/healthz")
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()
    return found


def assert_unavailable(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == "5"
    assert answer.json()["kind"] == "StoreUnavailable"


def test_a_frozen_postgresql_makes_calls_answer_503_in_time_and_health_degraded(
    on_postgres: Served, cluster: PrivatePostgres
) -> None:
    key = on_postgres.key("acme")
    cluster.freeze()
    try:
        with bounded(on_postgres, key) as client:
            assert_unavailable(client.get("/v1/runs"))
            assert_unavailable(client.get("/v1/runs"))  # every call, not only the first
        degraded = health(on_postgres)
        assert degraded["status"] == "degraded"
        assert "did not answer" in str(degraded["reason"])
    finally:
        cluster.thaw()
    with bounded(on_postgres, key) as client:
        assert client.get("/v1/runs").json() == []
    assert health(on_postgres)["status"] == "ok"


def test_a_locked_sqlite_file_makes_writes_answer_503_with_retry_after(tmp_path: Path) -> None:
    with serving(tmp_path / "state", config=CONFIG) as server:
        lock = SqliteLock(tmp_path / "state" / "golem.db")
        lock.hold()
        try:
            with bounded(server, server.admin_key) as admin:
                assert_unavailable(admin.post("/v1/keys", json={"tenant": "acme"}))
            assert health(server)["status"] == "degraded"
        finally:
            lock.release()
        with bounded(server, server.admin_key) as admin:
            assert admin.post("/v1/keys", json={"tenant": "acme"}).status_code == 201
        assert health(server)["status"] == "ok"


def store_away(served: Served, key: str) -> bool:
    """Whether the server finds its store away (a call that needs it answers 503)."""
    with bounded(served, key) as client:
        return client.get("/v1/runs").status_code == 503


@pytest.mark.bwrap
def test_a_run_the_store_left_mid_way_ends_once_it_is_back_and_workers_claim_again(
    on_postgres: Served, cluster: PrivatePostgres, remote: Path
) -> None:
    key = on_postgres.key("acme", "trusted")
    with on_postgres.client(key) as client:
        run_id = submit(client, remote, model=f"scripted:{OUTAGE}").json()["id"]
        follow(client, run_id, until=agent_working)
        cluster.stop()
        wait_until(lambda: store_away(on_postgres, key), what="the server to see the outage")
        cluster.start()
        events = follow(client, run_id)
        assert events[-1][0] == "run_end"
        ended = client.get(f"/v1/runs/{run_id}").json()
        assert ended["status"] == "succeeded", ended
        assert ended["pr"]["number"] == 1
        again = submit(client, remote)  # not 429: the run's runner is free again
        assert again.status_code == 202, again.text
        assert follow(client, again.json()["id"])[-1][1]["status"] == "succeeded"
    assert [box for box in boxes(on_postgres) if not box["owner_alive"]] == []


@pytest.mark.bwrap
def test_a_run_whose_sqlite_file_was_locked_mid_way_ends_once_it_is_free(
    tmp_path: Path, remote: Path
) -> None:
    with serving(tmp_path / "state", config=CONFIG) as server:
        lock = SqliteLock(tmp_path / "state" / "golem.db")
        with server.client(server.key("acme", "trusted")) as client:
            run_id = submit(client, remote, model=f"scripted:{OUTAGE}").json()["id"]
            follow(client, run_id, until=agent_working)
            lock.hold()
            try:  # the agent's next event finds the file locked, and waits
                wait_until(lambda: WRITE_WAITS in "".join(server.output), what="a write to wait")
            finally:
                lock.release()
            assert follow(client, run_id)[-1][1]["status"] == "succeeded"
            assert client.get(f"/v1/runs/{run_id}").json()["pr"]["number"] == 1
        assert [box for box in boxes(server) if not box["owner_alive"]] == []


@pytest.mark.bwrap
@pytest.mark.parametrize("fault", ["stopped", "frozen"])
def test_sigterm_while_the_store_is_away_still_removes_every_box(
    on_postgres: Served, cluster: PrivatePostgres, remote: Path, fault: str
) -> None:
    key = on_postgres.key("acme", "trusted")
    with on_postgres.client(key) as client:
        run_id = submit(client, remote, model=f"scripted:{OUTAGE}").json()["id"]
        follow(client, run_id, until=agent_working)
        session = client.post("/v1/sessions", json={})
        assert session.status_code == 201, session.text
        assert len(boxes(on_postgres)) >= 2
        if fault == "stopped":
            cluster.stop()
        else:
            cluster.freeze()  # its connections hang: nothing answers
        wait_until(lambda: store_away(on_postgres, key), what="the server to see the outage")
        on_postgres.stop()
    log = "".join(on_postgres.output)
    assert "Application shutdown complete" in log, log
    assert "Application shutdown failed" not in log, log
    assert boxes(on_postgres) == []


@pytest.mark.bwrap
def test_an_event_stream_ends_with_a_problem_event_when_the_store_fails(
    on_postgres: Served, cluster: PrivatePostgres, remote: Path
) -> None:
    key = on_postgres.key("acme", "trusted")
    with on_postgres.client(key) as client:
        run_id = submit(client, remote, model=FIX, blueprint=str(GATED)).json()["id"]
        seen: list[tuple[str, dict[str, object]]] = []
        kind = ""
        with client.stream("GET", f"/v1/runs/{run_id}/events", timeout=BOUND * 4) as stream:
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    kind = line.removeprefix("event:").strip()
                elif line.startswith("data:"):
                    seen.append((kind, json.loads(line.removeprefix("data:"))))
                    if kind == "gate_wait":
                        cluster.stop()
        assert seen[-1][0] == "problem", seen[-1]
        assert seen[-1][1]["status"] == 503
        assert "database" in str(seen[-1][1]["detail"])
        cluster.start()
        assert client.post(f"/v1/runs/{run_id}/cancel").status_code == 200
        assert follow(client, run_id)[-1][1]["status"] == "cancelled"


TWO_SERVERS = """
[server]
max_runs = 1
max_queued = 2
overflow = "queue"
retry_after = 9
"""


@pytest.mark.bwrap
def test_two_servers_on_one_store_never_queue_more_than_the_cap(
    tmp_path: Path, postgres_url: str, remote: Path
) -> None:
    env = {"GOLEM_DATABASE_URL": postgres_url}
    with (
        serving(tmp_path / "a" / "state", config=TWO_SERVERS, env=env) as first,
        serving(tmp_path / "b" / "state", config=TWO_SERVERS, env=env) as second,
    ):
        key = first.key("acme", "trusted")
        clients = [first.client(key), second.client(key)]
        busy = [submit(client, remote, model=f"scripted:{SLOW}").json()["id"] for client in clients]
        for run_id in busy:  # each server's one runner works: what comes next waits
            follow(clients[0], run_id, until=agent_working)

        def one(number: int) -> httpx.Response:
            return submit(clients[number % 2], remote)

        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(one, range(12)))
        assert sorted(a.status_code for a in answers) == [202] * 2 + [429] * 10
        assert all(a.headers["retry-after"] == "9" for a in answers if a.status_code == 429)
        queued = [r for r in clients[0].get("/v1/runs").json() if r["status"] == "queued"]
        assert len(queued) == 2
        for run in [*busy, *(r["id"] for r in queued)]:
            assert clients[0].post(f"/v1/runs/{run}/cancel").status_code == 200
        for client in clients:
            client.close()


def test_a_run_whose_runner_cannot_start_it_ends_failed_with_the_reason(tmp_path: Path) -> None:
    with serving(tmp_path / "state", config=CONFIG) as server:
        key = server.key("acme", "trusted")
        run_id = asyncio.run(_queue_a_broken_run(tmp_path / "state" / "golem.db"))

        def ended() -> bool:
            with bounded(server, key) as client:
                return bool(client.get(f"/v1/runs/{run_id}").json()["status"] == "failed")

        wait_until(ended, what="the run to end")  # not `running` forever
        with server.client(key) as client:
            run = client.get(f"/v1/runs/{run_id}").json()
            assert "not valid YAML" in run["error"], run
            assert follow(client, run_id)[-1][0] == "run_end"


async def _queue_a_broken_run(database: Path) -> str:
    """Queue a run, as an older golem could have, whose kept blueprint no longer parses."""
    store = await SqlStore.connect(f"sqlite:///{database}", tenant="acme")
    try:
        request = RunRequest(repo="/nowhere", task="anything")
        state = RunState(id=new_id("run"), request=request, blueprint="old",
                         blueprint_source="nodes: [", current="prepare")  # fmt: skip
        await RunBook(store).create(state)
    finally:
        await store.close()
    return state.id
