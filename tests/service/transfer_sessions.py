"""Sessions of a real `golem serve` for the transfer tests: a tenant's key, its box and a shell
(fixtures)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.service.served import Served, unb64


@pytest.fixture
def key(served: Served) -> str:
    return served.tenant_key("acme")


@pytest.fixture
def acme(served: Served, key: str) -> Iterator[httpx.Client]:
    with served.client(key) as client:
        yield client


def open_session(acme: httpx.Client, **spec: object) -> str:
    made = acme.post("/v1/sessions", json={"spec": spec})
    assert made.status_code == 201, made.text
    session: str = made.json()["id"]
    return session


@pytest.fixture
def session(acme: httpx.Client) -> Iterator[str]:
    session = open_session(acme)
    yield session
    acme.delete(f"/v1/sessions/{session}")


def until(condition: Callable[[], bool], what: str, within: float = 30.0) -> None:
    """Wait for ``condition`` (looked at every 50 ms), failing after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"still not {what} after {within}s"
        time.sleep(0.05)


def shell(acme: httpx.Client, session: str, cmd: str) -> str:
    done = acme.post(f"/v1/sessions/{session}/exec", json={"cmd": cmd})
    assert done.status_code == 200, done.text
    return unb64(done.json()["stdout"]).decode()
