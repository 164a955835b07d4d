"""A client's bad values over HTTP against a real server: box spec values past what the
backends honour and unknown background-process ids are 4xx problem details saying what is
wrong, for a user key and an admin key alike (whose policy caps nothing); through
RemoteEngine as through this machine's engine, an unknown process is ProcessNotFound."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from golem.core import GolemConfig
from golem.core.errors import ProcessNotFound
from golem.sandbox import Engine, LocalEngine, RemoteEngine
from tests.service.served import Served

pytestmark = pytest.mark.bwrap

BAD_SPECS: list[tuple[str, Any]] = [
    ("memory", 0),
    ("tmp_size", "9999999t"),
    ("workspace_size", "9999999t"),
    ("user", "4294967295:4294967295"),
    ("cpus", 0.001),
    ("pids", 10**12),
    ("timeout", 1e300),
    ("env", {"BIG": "x" * 200 * 1024}),
]


@pytest.fixture(params=["user", "admin"])
def client(served: Served, request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    with served.client(served.tenant_key("acme", role=request.param)) as client:
        yield client


@pytest.mark.parametrize(("field", "value"), BAD_SPECS, ids=[f for f, _ in BAD_SPECS])
def test_a_spec_value_past_a_bound_is_a_4xx_naming_the_field(
    client: httpx.Client, field: str, value: Any
) -> None:
    answer = client.post("/v1/sessions", json={"spec": {field: value}})
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert field in answer.json()["detail"]
    assert client.get("/v1/sessions").json() == []


def test_a_huge_environment_value_is_refused_without_a_box(client: httpx.Client) -> None:
    answer = client.post("/v1/sessions", json={"spec": {"env": {"HUGE": "x" * 100 * 1024**2}}})
    assert answer.status_code in (413, 422), answer.text
    assert client.get("/v1/sessions").json() == []


@pytest.fixture
def session(client: httpx.Client) -> Iterator[str]:
    made = client.post("/v1/sessions", json={})
    assert made.status_code == 201, made.text
    yield made.json()["id"]
    client.delete(f"/v1/sessions/{made.json()['id']}")


@pytest.mark.parametrize(
    ("method", "tail", "body"),
    [
        ("GET", "/output", None),
        ("POST", "/signal", {"signal": 15}),
        ("POST", "/wait", {"timeout": 1}),
        ("DELETE", "", None),
    ],
    ids=["output", "signal", "wait", "forget"],
)
def test_an_unknown_background_process_is_404(
    client: httpx.Client, session: str, method: str, tail: str, body: dict[str, int] | None
) -> None:
    path = f"/v1/sessions/{session}/processes/proc-nope{tail}"
    answer = client.request(method, path, json=body)
    assert answer.status_code == 404, answer.text
    assert "proc-nope" in answer.json()["detail"]
    alive = client.post(f"/v1/sessions/{session}/exec", json={"cmd": "echo still"})
    assert alive.status_code == 200, alive.text


@pytest.mark.parametrize("where", ["local", "remote"])
async def test_an_unknown_process_is_process_not_found_on_both_engines(
    served: Served, config: GolemConfig, where: str
) -> None:
    engine: Engine = (
        LocalEngine(config)
        if where == "local"
        else RemoteEngine(served.url, served.tenant_key("parity"), config=config)
    )
    async with engine, engine.session() as box:
        with pytest.raises(ProcessNotFound, match="proc-nope"):
            await box.read_output("proc-nope")
        with pytest.raises(ProcessNotFound, match="proc-nope"):
            await box.signal("proc-nope")
        with pytest.raises(ProcessNotFound, match="proc-nope"):
            await box.wait("proc-nope", 1)
        with pytest.raises(ProcessNotFound, match="proc-nope"):
            await box.forget("proc-nope")
        assert (await box.execute("echo alive")).stdout == b"alive\n"
