"""A server-sent event stream that fails after its 200 says why in its last event,
``event: problem`` (a problem's details), rather than just ending: a session's call
stream, a one-shot call stream and a session's setup stream whose box is killed
mid-stream."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import kill_box_from_outside
from tests.service.served import Served, unb64

pytestmark = pytest.mark.bwrap

DEADLINE = 30.0


@pytest.fixture(scope="module")
def served(unpooled_server: Served) -> Iterator[Served]:
    """No warm pool: every box a new one, its record on disk."""
    with unpooled_server.tidied() as server:
        yield server


@pytest.fixture
def client(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.tenant_key("t")) as made:
        yield made


class Events:
    """A stream's events as (name, data) pairs, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200, response.read()
        self._lines = response.iter_lines()

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        name = "message"
        for line in self._lines:
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                yield name, json.loads(line.removeprefix("data:").strip())
                name = "message"


def kill_box(served: Served, box_id: str) -> None:
    record = json.loads((served.state_dir / "boxes" / f"{box_id}.json").read_text())
    kill_box_from_outside(record["state"])


def ends_with_a_problem(events: Iterator[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The stream's last event, once it has ended: a problem."""
    rest = list(events)
    assert rest, "the stream ended with no event after the box was killed"
    name, data = rest[-1]
    assert name == "problem", rest
    assert data["status"] >= 400
    assert data["kind"], data
    assert data["detail"], data
    return data


def test_a_session_stream_whose_box_dies_ends_with_a_problem(
    served: Served, client: httpx.Client
) -> None:
    session = client.post("/v1/sessions", json={}).json()["id"]
    body = {"cmd": "echo up; exec sleep 3600"}
    with client.stream("POST", f"/v1/sessions/{session}/exec/stream", json=body) as response:
        events = iter(Events(response))
        assert unb64(next(events)[1]["data"]) == b"up\n"
        kill_box(served, session)
        problem = ends_with_a_problem(events)
    assert problem["kind"] == "BoxCrashed"


def test_a_one_shot_stream_whose_box_dies_ends_with_a_problem(
    served: Served, client: httpx.Client
) -> None:
    body = {"request": {"cmd": "echo up; exec sleep 3600"}}
    with client.stream("POST", "/v1/exec/stream", json=body) as response:
        events = iter(Events(response))
        assert unb64(next(events)[1]["data"]) == b"up\n"
        (held,) = client.get("/v1/sessions").json()
        kill_box(served, held["id"])
        problem = ends_with_a_problem(events)
    assert problem["kind"] == "BoxCrashed"


def _new_box(served: Served, known: set[str]) -> str:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        made = {p.stem for p in (served.state_dir / "boxes").glob("*.json")} - known
        if made:
            (box_id,) = made
            return box_id
        time.sleep(0.05)  # no event tells a box's record was written
    raise AssertionError("no box was made for the session")


def test_a_session_whose_box_dies_in_its_setup_ends_with_a_problem(
    served: Served, client: httpx.Client
) -> None:
    known = {p.stem for p in Path(served.state_dir / "boxes").glob("*.json")}
    body = {"spec": {"setup": "echo up; exec sleep 3600"}}
    with client.stream("POST", "/v1/sessions/stream", json=body) as response:
        events = iter(Events(response))
        assert unb64(next(events)[1]["data"]) == b"up\n"
        kill_box(served, _new_box(served, known))
        ends_with_a_problem(events)
    assert client.get("/v1/sessions").json() == []
