"""Downloads are flow-controlled on the host's side too: a box whose supervisor ignores the
window it was granted (a box that took over its supervisor) loses its connection instead of
filling the host's memory. Against a hostile supervisor speaking the real framing."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest

from golem.core.errors import BoxCrashed
from golem.sandbox.files import MAX_CHUNK, WINDOW, BoxFiles
from golem.sandbox.supervisor.box.framing import HEADER, encode
from golem.sandbox.supervisor.client import SessionClient, SupervisorClient
from golem.sandbox.takeback import TakebackLimits

MIB = 1024 * 1024
frame = encode


def read_frame(sock: socket.socket) -> dict[str, object]:
    header = sock.recv(HEADER.size, socket.MSG_WAITALL)
    json_len, payload_len = HEADER.unpack(header)
    body = sock.recv(json_len, socket.MSG_WAITALL)
    if payload_len:
        sock.recv(payload_len, socket.MSG_WAITALL)
    message = json.loads(body)
    assert isinstance(message, dict)
    return message


def hostile_supervisor(sock: socket.socket, chunks: int, sent: list[int]) -> None:
    """Answers hello, then floods the first download with 1 MiB chunks, ignoring its
    window; stops when the host hangs up."""
    hello = read_frame(sock)
    info = {"op": "hello", "id": hello["id"], "version": 1, "pid": 1, "uid": 1000,
            "gid": 1000, "python": "/usr/bin/python3", "runtimes": {}}  # fmt: skip
    sock.sendall(frame(info))
    get = read_frame(sock)
    assert get["window"] == WINDOW
    sock.sendall(frame({"op": "meta", "id": get["id"], "size": chunks * MIB}))  # honest
    try:
        for _ in range(chunks):
            sock.sendall(frame({"op": "chunk", "id": get["id"]}, b"\0" * MIB))
            sent[0] += 1
    except OSError:
        return


async def test_a_box_that_sends_past_its_window_loses_its_connection() -> None:
    host_side, box_side = socket.socketpair()
    sent = [0]
    flood = threading.Thread(target=hostile_supervisor, args=(box_side, 400, sent))
    flood.start()
    reader, writer = await asyncio.open_connection(sock=host_side)
    client = SupervisorClient(reader, writer)
    await client.start(10)
    files = BoxFiles(SessionClient(client, "box-test"), limits=TakebackLimits(10**12, 10**12))
    download = aiter(files.stream_file("/workspace/flood"))
    await anext(download)
    # A slow consumer: while it holds back, the router reads what the box floods in, until
    # the box passes its grant and the router stops.
    assert client._reader_task is not None
    await asyncio.wait_for(client._reader_task, 60)
    with pytest.raises(BoxCrashed, match=r"more than the \d+ bytes it was granted"):
        [chunk async for chunk in download]
    await client.close()
    await asyncio.to_thread(flood.join, 10)
    box_side.close()
    assert not flood.is_alive()
    assert sent[0] < 400, "the host stopped reading once the box passed its grant"
    assert WINDOW * MAX_CHUNK < 400 * MIB
