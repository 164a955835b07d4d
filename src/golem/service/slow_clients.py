"""Read deadlines for HTTP clients: uvicorn's HTTP/1.1 protocol (h11), with a time limit on a
request's headers and a minimum rate for its body.

uvicorn times out only an idle keep-alive connection; once a byte arrives it waits for the
rest for ever, so a client that sends a header byte (or a body byte) every few seconds holds
its connection, and enough of them hold the server. Like nginx's ``client_header_timeout``
and gunicorn's ``timeout``, this drops such a client: a 408 where no response has started,
then the connection is closed.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ReadLimits", "guarded_protocol"]


@dataclass(frozen=True)
class ReadLimits:
    """``header_timeout``: seconds from a connection's (or a request's) first byte to the end
    of its headers; ``body_timeout`` and ``body_min_rate``: each ``body_timeout`` seconds of
    a request body that the server is ready to read must bring ``body_min_rate`` bytes per
    second (at least one byte)."""

    header_timeout: float
    body_timeout: float
    body_min_rate: int


def _timeout_response(what: str) -> bytes:
    body = json.dumps(
        {
            "type": "about:blank",
            "title": "Request Timeout",
            "status": 408,
            "detail": f"the request's {what} came too slowly; send it at once and retry",
            "kind": "RequestTimeout",
        }
    ).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/problem+json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class _GuardedProtocol(H11Protocol):
    """H11Protocol with the deadlines of ``limits`` (set on the subclass that serves)."""

    limits: ReadLimits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()  # a client that connects and says nothing is slow too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._header_timer is None:
            self._arm_header_timer()
        self._body_bytes += len(data)
        super().data_received(data)
        self._follow_state()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_state()

    def _follow_state(self) -> None:
        """Keep the timer that fits where the client is: writing headers, a body, or done."""
        if self.transport.get_protocol() is not self:  # upgraded to a WebSocket
            self._cancel_timers()
            return
        state = self.conn.their_state
        if state is not h11.IDLE and self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if state is h11.SEND_BODY and self._body_timer is None:
            self._body_bytes = 0
            self._body_timer = self.loop.call_later(self.limits.body_timeout, self._check_body)
        elif state is not h11.SEND_BODY and self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _arm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.limits.header_timeout, self._drop, "headers")

    def _check_body(self) -> None:
        self._body_timer = None
        wanted = max(1, int(self.limits.body_min_rate * self.limits.body_timeout))
        if self._body_bytes < wanted and not self._server_holds_body():
            self._drop("body")
            return
        self._body_bytes = 0
        self._follow_state()

    def _server_holds_body(self) -> bool:
        """Whether the body waits on the server: reading paused (its buffer is full), or
        the client waits for the ``100 Continue`` the app has not asked for yet."""
        cycle = self.cycle
        return self.flow.read_paused or (cycle is not None and cycle.waiting_for_100_continue)

    def _drop(self, what: str) -> None:
        self._header_timer = None
        self._cancel_timers()
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
            self.transport.write(_timeout_response(what))
        if self.cycle is not None:
            self.cycle.keep_alive = False
        self.logger.warning("dropped %s: its %s came too slowly", self.client, what)
        self.transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._header_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._body_timer = None


def guarded_protocol(limits: ReadLimits) -> type[H11Protocol]:
    """The HTTP protocol class for uvicorn's ``http=``, with ``limits``."""
    return type("GuardedH11Protocol", (_GuardedProtocol,), {"limits": limits})
