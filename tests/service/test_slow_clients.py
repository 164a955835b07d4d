"""Slow clients against a real server over real sockets: one that sends its headers (or its
body) a byte at a time is answered 408 and dropped once its deadline passes, while other
clients keep being served; a WebSocket or a quick request is never cut."""

from __future__ import annotations

import json
import socket
import threading
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.sync.client import connect

from tests.service.served import Served, shared_server, unb64

SLOW_CLIENTS = 200
DRIP_EVERY = 0.2  # seconds between a slow client's bytes: well inside the server's deadline
DEADLINE = 60.0  # seconds the test waits for the server to drop a client (its limit is 1)

CONFIG = """
[server]
header_timeout = 1
body_timeout = 1
body_min_rate = 1024
"""


served = shared_server("slow", config=CONFIG)


def _connect(served: Served) -> socket.socket:
    url = urlsplit(served.url)
    return socket.create_connection((url.hostname, url.port), timeout=DEADLINE)


def _answer(client: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a close that finds a
    client's byte unread is a reset, which may drop what was sent before it)."""
    received = b""
    try:
        while chunk := client.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


class Drip:
    """Sends one byte to each socket every DRIP_EVERY seconds until the server closes it."""

    def __init__(self, clients: list[socket.socket], byte: bytes) -> None:
        self.clients = list(clients)
        self.byte = byte
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Drip:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def _run(self) -> None:
        while self.clients and not self.stop.wait(DRIP_EVERY):
            for client in list(self.clients):
                try:
                    client.send(self.byte)
                except OSError:  # the server closed it: nothing more to drip
                    self.clients.remove(client)


def _assert_dropped(answer: bytes) -> None:
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_clients_that_send_headers_a_byte_at_a_time_are_dropped_and_others_served(
    served: Served,
) -> None:
    slow = [_connect(served) for _ in range(SLOW_CLIENTS)]
    try:
        for client in slow:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        with Drip(slow, b"a"), httpx.Client(base_url=served.url, timeout=DEADLINE) as quick:
            assert quick.get("/healthz").status_code == 200
            for client in slow:
                _assert_dropped(_answer(client))
            assert quick.get("/healthz").status_code == 200
    finally:
        for client in slow:
            client.close()


def test_a_client_that_connects_and_says_nothing_is_dropped(served: Served) -> None:
    with _connect(served) as silent:
        _assert_dropped(_answer(silent))


def test_a_body_sent_a_byte_at_a_time_is_answered_408_and_dropped(served: Served) -> None:
    slow = [_connect(served) for _ in range(20)]
    try:
        for client in slow:
            client.sendall(
                b"POST /v1/keys HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {served.admin_key}\r\n".encode()
                + b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
            )
        with Drip(slow, b" "):
            answers = [_answer(client) for client in slow]
        for answer in answers:
            _assert_dropped(answer)
            assert answer == b"" or b"body came too slowly" in answer
    finally:
        for client in slow:
            client.close()


@pytest.mark.bwrap
def test_a_quick_client_on_a_kept_alive_connection_and_a_quiet_websocket_stay(
    served: Served,
) -> None:
    with httpx.Client(base_url=served.url, timeout=DEADLINE) as quick:
        for _ in range(3):
            assert quick.get("/healthz").status_code == 200
    headers = {"Authorization": f"Bearer {served.admin_key}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=DEADLINE) as admin:
        session = admin.post("/v1/sessions", json={}).json()["id"]
        try:
            ws_url = served.url.replace("http://", "ws://") + f"/v1/sessions/{session}/exec/ws"
            with connect(ws_url, additional_headers=headers) as ws:
                ws.send('{"request": {"cmd": "read line; echo got:$line"}}')
                with pytest.raises(TimeoutError):  # quiet past both of the server's deadlines
                    ws.recv(3)
                ws.send('{"stdin": "aGkK"}')
                assert unb64(json.loads(ws.recv(DEADLINE))["data"]) == b"got:hi\n"
        finally:
            admin.delete(f"/v1/sessions/{session}")
