"""Session limits under concurrency and boxes that end by themselves, on a real server
(and a real engine under the registry): caps exact after a wait, a bounded wait, no box for
a client that left, and a dead or reaped box's session gone (410), not listed, not counted."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from golem.core.config import load_config
from golem.core.errors import BoxEnded, SessionNotFound
from golem.sandbox import LocalEngine
from golem.sandbox.records import BoxRegistry
from golem.service.keys import Principal
from golem.service.sessions import SessionRegistry
from tests.conftest import (
    QUICK_START_BACKENDS,
    backend_toml,
    kill_box_from_outside,
)
from tests.service.served import Served, serving

QUEUE = """
[server]
max_sessions = {server}
overflow = "queue"
retry_after = 7
session_wait = {wait}
[server.policies.user]
max_sessions = {share}
"""


def _client(server: Served, key: str, timeout: httpx.Timeout | float) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=timeout)


def _post_all(server: Served, key: str, count: int) -> tuple[list[int], list[threading.Thread]]:
    """``count`` session requests of one key, sent; their statuses come in the list once
    the threads end."""
    answers: list[int] = []
    sent = threading.Semaphore(0)

    def trace(event: str, _info: object) -> None:
        if event == "http11.send_request_body.complete":
            sent.release()

    def create() -> None:
        with server.client(key) as client:
            made = client.post("/v1/sessions", json={}, extensions={"trace": trace})
            answers.append(made.status_code)

    threads = [threading.Thread(target=create) for _ in range(count)]
    for thread in threads:
        thread.start()
    for _ in threads:
        assert sent.acquire(timeout=60)
    return answers, threads


@pytest.mark.bwrap
def test_a_tenants_cap_holds_for_requests_that_waited_together(tmp_path: Path) -> None:
    with serving(tmp_path / "state", config=QUEUE.format(server=4, share=2, wait=60)) as server:
        with server.client(server.key("big", role="trusted")) as big:
            held = [big.post("/v1/sessions", json={}).json()["id"] for _ in range(4)]
            acme_key = server.key("acme")
            answers, threads = _post_all(server, acme_key, 4)
            for session_id in held:  # four slots free at once: all four waiters wake
                assert big.delete(f"/v1/sessions/{session_id}").status_code == 204
            for thread in threads:
                thread.join(120)
        assert sorted(answers) == [201, 201, 429, 429]
        with server.client(acme_key) as acme:
            assert len(acme.get("/v1/sessions").json()) == 2


@pytest.mark.bwrap
def test_a_wait_for_room_ends_in_429_with_retry_after(tmp_path: Path) -> None:
    config = QUEUE.format(server=1, share=5, wait=1)
    with (
        serving(tmp_path / "state", config=config) as server,
        server.client(server.key("b")) as other,
        _client(server, server.key("acme"), 60) as acme,
    ):
        assert other.post("/v1/sessions", json={}).status_code == 201
        waited = acme.post("/v1/sessions", json={})
        assert waited.status_code == 429, waited.text
        assert waited.headers["retry-after"] == "7"
        assert "server.session_wait" in waited.json()["detail"]


@pytest.mark.bwrap
def test_a_client_that_leaves_while_waiting_gets_no_box(tmp_path: Path) -> None:
    with serving(tmp_path / "state", config=QUEUE.format(server=1, share=5, wait=60)) as server:
        acme_key = server.key("acme")
        with _client(server, server.key("b"), 30) as other:
            first = other.post("/v1/sessions", json={}).json()["id"]
            with (
                _client(server, acme_key, httpx.Timeout(30, read=1)) as leaving,
                pytest.raises(httpx.ReadTimeout),
            ):
                leaving.post("/v1/sessions", json={})
            assert other.delete(f"/v1/sessions/{first}").status_code == 204
            # The slot is free for the next request, not taken by a box made for nobody.
            again = other.post("/v1/sessions", json={})
            assert again.status_code == 201, again.text
        with server.client(acme_key) as acme:
            assert acme.get("/v1/sessions").json() == []


@pytest.fixture(params=QUICK_START_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def served_one(tmp_path: Path, backend: str) -> Iterator[Served]:
    config = QUEUE.format(server=4, share=1, wait=1) + backend_toml(backend)
    with serving(tmp_path / "state", config=config) as server:
        yield server


def _end_from_outside(state: dict[str, Any]) -> None:
    """Kill a bubblewrap box's processes; remove a container, as `docker rm -f` does."""
    if "container" not in state:
        kill_box_from_outside(state)
        return
    with docker.APIClient(base_url=state["docker_host"], version="auto") as api:
        api.remove_container(state["container"], force=True)


def test_a_session_whose_box_was_killed_or_removed_answers_410_and_frees_its_slot(
    served_one: Served,
) -> None:
    key = served_one.key("acme")
    with served_one.client(key) as acme:
        session = acme.post("/v1/sessions", json={}).json()["id"]
        record = BoxRegistry(served_one.state_dir).load(session)
        assert record is not None
        _end_from_outside(record.state)
        dead = acme.post(f"/v1/sessions/{session}/exec", json={"cmd": "true"})
        assert dead.status_code == 410, dead.text
        again = acme.get(f"/v1/sessions/{session}")
        assert again.status_code == 410
        assert again.json()["kind"] == "BoxEnded"
        assert "start a new session" in again.json()["detail"]
        url = served_one.url.replace("http://", "ws://") + f"/v1/sessions/{session}/calls"
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers={"Authorization": f"Bearer {key}"})
        assert refused.value.response.status_code == 410
        assert acme.get("/v1/sessions").json() == []
        fresh = acme.post("/v1/sessions", json={})  # the tenant's one slot is free again
        assert fresh.status_code == 201, fresh.text
        done = acme.post(f"/v1/sessions/{fresh.json()['id']}/exec", json={"cmd": "echo ok"})
        assert done.status_code == 200
        assert acme.delete(f"/v1/sessions/{session}").status_code == 204


@pytest.mark.bwrap
async def test_a_session_reaped_by_age_is_gone_and_no_longer_counts(tmp_path: Path) -> None:
    config = load_config(
        {
            "state_dir": str(tmp_path / "state"),
            "engine": {"pool": {"max_age": 600}},
            "server": {"policies": {"user": {"max_sessions": 1}}},
        },
        files=[],
    )
    acme = Principal(tenant="acme", role="user", key_id="k")
    async with LocalEngine(config) as engine:
        registry = SessionRegistry(config, engine)
        held = await registry.open(acme, {})
        assert await engine.reap(now=time.time() + 601) == [held.box.id]
        with pytest.raises(BoxEnded, match=r"engine\.pool\.max_age") as ended:
            registry.get(acme, held.box.id)
        assert ended.value.http_status == 410
        with pytest.raises(SessionNotFound):  # another tenant learns nothing
            registry.get(Principal(tenant="b", role="user", key_id="b"), held.box.id)
        assert registry.list(acme) == []
        fresh = await registry.open(acme, {})
        assert (await fresh.box.execute("echo ok")).stdout == b"ok\n"
        await registry.close_all()


@pytest.mark.bwrap
def test_a_client_that_leaves_while_its_box_is_made_leaves_no_box(tmp_path: Path) -> None:
    with serving(tmp_path / "state", config=QUEUE.format(server=2, share=2, wait=60)) as server:
        key = server.key("acme")
        slow = {"spec": {"setup": "sleep 120"}}
        with (
            _client(server, key, httpx.Timeout(30, read=1)) as leaving,
            pytest.raises(httpx.ReadTimeout),
        ):
            leaving.post("/v1/sessions", json=slow)
        boxes = BoxRegistry(server.state_dir)
        deadline = time.monotonic() + 60
        while boxes.all() and time.monotonic() < deadline:
            time.sleep(0.1)  # polls a condition: the box's stop has no event to wait on
        assert boxes.all() == []
        with server.client(key) as acme:
            assert acme.get("/v1/sessions").json() == []
