"""``golem.service.node_app``, the server a cluster node's box host runs (without Ray here):
a real uvicorn on loopback serving it, a RemoteEngine using its session, its admin key the
only key, nothing but the session routes, ``serving`` entered once the state is open and
exited before it closes, and ``failed`` told why a state that cannot open did not."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import uvicorn

from golem.core import GolemConfig
from golem.core.config import load_config
from golem.sandbox import RemoteEngine
from golem.service import NODE_PRINCIPAL, ServerState, node_app

pytestmark = pytest.mark.bwrap

KEY_ENV = "GOLEM_TEST_NODE_KEY"
KEY = "golem-node-test-key"
WAIT = 60.0


@dataclass
class Node:
    """A node server running on a thread of its own, and what its hooks saw."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread
    seen: list[str] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    states: list[ServerState] = field(default_factory=list)


def _settings(state_dir: Path) -> GolemConfig:
    return load_config(
        {"state_dir": str(state_dir), "server": {"admin_key_env": KEY_ENV}}, files=[]
    )


@asynccontextmanager
async def _node(settings: GolemConfig) -> AsyncIterator[Node]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    ready = threading.Event()
    seen: list[str] = []
    failures: list[BaseException] = []
    states: list[ServerState] = []

    @asynccontextmanager
    async def serving(state: ServerState) -> AsyncIterator[None]:
        seen.append("serving")
        states.append(state)
        ready.set()
        try:
            yield
        finally:
            seen.append(f"stopped, sessions still {len(state.sessions.list(NODE_PRINCIPAL))}")

    def failed(error: BaseException) -> None:
        failures.append(error)
        ready.set()

    app = node_app(settings, serving, failed)
    config = uvicorn.Config(app, log_level="warning", ws="websockets-sansio", loop="asyncio")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=_run, args=(server, listener), daemon=True)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    node = Node(url, server, thread, seen, failures, states)
    thread.start()
    try:
        assert ready.wait(WAIT), "the node server neither served nor failed"
        yield node
    finally:
        node.server.should_exit = True
        node.thread.join(WAIT)
        listener.close()


def _run(server: uvicorn.Server, listener: socket.socket) -> None:
    """Serve until told to stop; a server whose startup failed exits (its ``failed``
    hook has the reason)."""
    with contextlib.suppress(SystemExit):
        server.run(sockets=[listener])


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


async def test_a_node_server_serves_sessions_to_its_key_and_nothing_else(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "node")
    async with _node(settings) as node:
        assert node.failures == []
        engine = RemoteEngine(node.url, KEY, config=settings, server_labels=True)
        async with engine, engine.session() as box:
            result = await box.execute("echo on the node")
            assert result.stdout == b"on the node\n"
            held = node.states[0].sessions.list(NODE_PRINCIPAL)
            assert [session.box.id for session in held] == [box.id]
        async with httpx.AsyncClient(base_url=node.url) as client:
            stranger = await client.get("/v1/sessions", headers={"Authorization": "Bearer x"})
            assert stranger.status_code == 401
            admin = {"Authorization": f"Bearer {KEY}"}
            for path in ("/v1/runs", "/v1/keys", "/v1/cluster", "/mcp", "/", "/healthz"):
                assert (await client.get(path, headers=admin)).status_code == 404, path
    assert node.seen == ["serving", "stopped, sessions still 0"]
    assert not node.thread.is_alive()


async def test_a_node_server_whose_state_cannot_open_says_why(tmp_path: Path) -> None:
    blocked = tmp_path / "a file, not a directory"
    blocked.write_text("")
    async with _node(_settings(blocked)) as node:
        assert node.seen == []
        assert [type(error) for error in node.failures] == [FileExistsError]
    assert not node.thread.is_alive()
