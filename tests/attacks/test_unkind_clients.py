"""An adversarial review of issue 14: unkind clients crossing its lines another way than
the tests of each part do, against a real server and real boxes."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import tarfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from golem.core.config import load_config
from golem.sandbox import Box, LocalEngine, OutputEvent
from golem.sandbox.records import BoxRegistry
from golem.sandbox.supervisor.messages import Out
from golem.service.keys import Principal
from golem.service.sessions import SessionRegistry
from tests.conftest import kill_box_from_outside
from tests.sandbox.held_files import held_open
from tests.service.served import Served
from tests.service.transfer_sessions import shell, until

pytestmark = pytest.mark.bwrap

LONGEST_NAME = 255  # NAME_MAX of Linux file systems


@pytest.fixture
def acme(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.tenant_key("t")) as client:
        yield client


@pytest.fixture
def session(acme: httpx.Client) -> Iterator[str]:
    made = acme.post("/v1/sessions", json={})
    assert made.status_code == 201, made.text
    yield made.json()["id"]
    acme.delete(f"/v1/sessions/{made.json()['id']}")


def test_an_upload_to_the_longest_legal_name_lands(acme: httpx.Client, session: str) -> None:
    name = "n" * LONGEST_NAME
    files = f"/v1/sessions/{session}/files"
    put = acme.put(files, params={"path": name}, content=b"whole")
    assert put.status_code == 204, put.text
    assert acme.get(files, params={"path": name}).content == b"whole"


@pytest.mark.parametrize(
    ("method", "route"),
    [("PUT", "files"), ("GET", "files"), ("PUT", "archive"), ("GET", "archive")],
)
def test_a_name_longer_than_the_file_system_takes_is_a_4xx(
    acme: httpx.Client, session: str, method: str, route: str
) -> None:
    path = "x" * (LONGEST_NAME + 1)
    body = b"" if method == "PUT" else None
    answer = acme.request(
        method, f"/v1/sessions/{session}/{route}", params={"path": path}, content=body
    )
    assert answer.json()["kind"] in ("PathRefused", "PathNotFound"), answer.text


def test_a_box_killed_during_an_upload_answers_410(
    served: Served, acme: httpx.Client, session: str
) -> None:
    record = BoxRegistry(served.state_dir).load(session)
    assert record is not None
    url = httpx.URL(served.url)
    half = 2 << 20
    head = (
        f"PUT /v1/sessions/{session}/files?path=big HTTP/1.1\r\nHost: {url.host}\r\n"
        f"{acme.headers['Authorization'].join(['Authorization: ', ''])}\r\n"
        f"Content-Length: {2 * half}\r\n\r\n"
    )
    with socket.create_connection((url.host, url.port), timeout=30) as client:
        client.sendall(head.encode() + b"x" * half)
        until(lambda: bool(held_open(".golem-upload-")), "the upload landing in the box")
        kill_box_from_outside(record.state)
        gone = f"/v1/sessions/{session}"
        until(lambda: acme.get(gone).status_code == 410, "the session ended with its box")
        with contextlib.suppress(OSError):  # the server may answer before it reads it all
            client.sendall(b"x" * half)
        status_line = client.recv(4096).split(b"\r\n")[0]
    assert status_line == b"HTTP/1.1 410 Gone", status_line


@pytest.mark.parametrize(
    ("route", "path"), [("files", "new/deeper/file.bin"), ("archive", "new/deeper")]
)
def test_an_interrupted_upload_leaves_no_directory_it_made(
    served: Served, acme: httpx.Client, session: str, tmp_path: Path, route: str, path: str
) -> None:
    body = b"y" * (4 << 20)
    if route == "archive":
        (tmp_path / "big.bin").write_bytes(body)
        with tarfile.open(tmp_path / "tree.tar", "w") as archive:
            archive.add(tmp_path / "big.bin", arcname="big.bin")
        body = (tmp_path / "tree.tar").read_bytes()
    before = shell(acme, session, "ls -A")
    url = httpx.URL(served.url)
    head = (
        f"PUT /v1/sessions/{session}/{route}?path={path} HTTP/1.1\r\nHost: {url.host}\r\n"
        f"{acme.headers['Authorization'].join(['Authorization: ', ''])}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection((url.host, url.port), timeout=30) as client:
        client.sendall(head.encode() + body[: len(body) // 2])
        until(lambda: bool(held_open(".golem-upload-")), "the upload landing in the box")
    until(lambda: shell(acme, session, "ls -A") == before, "the workspace as it was")


def test_a_refused_archive_leaves_no_directory_it_made(acme: httpx.Client, session: str) -> None:
    before = shell(acme, session, "ls -A")
    put = acme.put(
        f"/v1/sessions/{session}/archive", params={"path": "fresh/dir"}, content=b"not tar" * 99
    )
    assert put.status_code == 422, put.text
    assert shell(acme, session, "ls -A") == before


async def test_a_stream_cancelled_as_its_next_frame_arrives_stops(box: Box) -> None:
    """A client that leaves just as the box sends output: the call's reader is cancelled in
    the same turn of the loop its frame arrives in, and must stop (a cancellation lost
    there kept a one-shot box, its call and its response alive until the call ended)."""
    client = box._client._client  # the box's connection, whose queue each call reads
    before = set(client._queues)
    events = box.stream("echo up; exec sleep 3600")
    reading = asyncio.ensure_future(anext(events))
    first = await reading
    assert isinstance(first, OutputEvent)
    (call_id,) = set(client._queues) - before
    reading = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0)  # the reader waits for its next frame
    client._queues[call_id].put_nowait((Out(stream="stdout"), b"late\n"))
    reading.cancel()
    done, _ = await asyncio.wait({reading}, timeout=10)
    assert done, "the cancelled reader went on reading"
    assert reading.cancelled()
    await events.aclose()


async def test_a_wait_for_room_cancelled_as_a_slot_frees_gets_no_box(tmp_path: Path) -> None:
    """A client that leaves while it waits for a session slot, in the turn of the loop the
    slot frees in: its wait must end there (a lost cancellation made it a box nobody
    asked for any more, or kept it waiting out server.session_wait)."""
    config = load_config(
        {
            "state_dir": str(tmp_path / "state"),
            "server": {"max_sessions": 1, "overflow": "queue", "session_wait": 60},
        },
        files=[],
    )
    acme = Principal(tenant="acme", role="user", key_id="k")
    async with LocalEngine(config) as engine:
        registry = SessionRegistry(config, engine)
        first = await registry.open(acme, {})
        waiting = asyncio.ensure_future(registry.open(acme, {}))
        await asyncio.sleep(0)  # it waits for room
        assert not waiting.done()
        registry._wake()  # what a freed slot does, then the client leaves
        waiting.cancel()
        done, _ = await asyncio.wait({waiting}, timeout=10)
        assert done, "the cancelled wait went on waiting"
        assert waiting.cancelled()
        assert [held.box.id for held in registry.list(acme)] == [first.box.id]
        await registry.close_all()


@pytest.mark.parametrize("cmd", [["/no/such/program"], ["/etc/hostname"]])
def test_a_background_process_that_cannot_start_is_a_422(
    acme: httpx.Client, session: str, cmd: list[str]
) -> None:
    started = acme.post(f"/v1/sessions/{session}/processes", json={"cmd": cmd})
    assert started.status_code == 422, started.text
    assert cmd[0] in started.json()["detail"]
