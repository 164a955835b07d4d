"""An adversarial review of issue 14's store faults: a store outage met where the existing
tests do not look (a key looked up outside a route, by the body-size middleware) is a 503
with Retry-After like any other, never a 500."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.faultdb import PrivatePostgres, pg_binaries, private_postgres
from tests.service.served import Served, serving

pytestmark = pytest.mark.skipif(pg_binaries() is None, reason="no PostgreSQL installed")

TIMEOUT = 2  # the server's database_timeout
BOUND = TIMEOUT * 3 + 5


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivatePostgres]:
    with private_postgres() as pg:
        yield pg


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, cluster: PrivatePostgres) -> Iterator[Served]:
    state = tmp_path_factory.mktemp("faults") / "state"
    env = {"GOLEM_DATABASE_URL": cluster.url}
    with serving(state, config=f"database_timeout = {TIMEOUT}\n", env=env) as server:
        yield server


@pytest.fixture
def frozen(served: Served, cluster: PrivatePostgres) -> Iterator[str]:
    """A key the server has not looked up yet, and the store frozen."""
    key = served.key("acme")
    cluster.freeze()
    try:
        yield key
    finally:
        cluster.thaw()


def _status_line(served: Served, head: str) -> bytes:
    url = httpx.URL(served.url)
    with socket.create_connection((url.host, url.port), timeout=BOUND) as client:
        client.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer and (part := client.recv(4096)):
            answer += part
    return answer


def test_a_large_upload_during_an_outage_is_a_503(served: Served, frozen: str) -> None:
    url = httpx.URL(served.url)
    head = (
        f"PUT /v1/sessions/box-x/files?path=f HTTP/1.1\r\nHost: {url.host}\r\n"
        f"Authorization: Bearer {frozen}\r\nContent-Length: {1 << 30}\r\n\r\n"
    )
    answer = _status_line(served, head)
    assert answer.startswith(b"HTTP/1.1 503 "), answer
    assert b"retry-after: " in answer.lower()
