"""A brokered credential never comes back through the egress proxy, whatever the upstream
does with its answer: every content encoding, stacked encodings, chunked framing, the
status line, header names and trailers (tests/attacks/secrets_upstream.py hides it each
way). The proxy decodes gzip and deflate before it masks, and refuses, with a 502 that
names the rule, what it cannot decode. A real proxy and a real upstream on loopback, and a
raw client that keeps every byte the proxy sends.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import h11
import pytest

from golem.core import Credential, EgressPolicy
from golem.sandbox.egress import CredentialBroker, EgressCA, EgressProxy, read_credential_values
from tests.attacks.secrets_upstream import CUT, DECODED, REFUSED, EchoUpstream

SECRET = "real-" + secrets.token_hex(16)
BASIC_SECRET = "pw-" + secrets.token_hex(16)
USER = "robot"
BASIC_TOKEN = base64.b64encode(f"{USER}:{BASIC_SECRET}".encode()).decode()


@dataclass
class Setup:
    proxy: EgressProxy
    port: int
    upstream: EchoUpstream
    upstream_port: int
    sentinel: str


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    upstream = EchoUpstream()
    upstream_port = await upstream.start("127.0.0.1")

    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    ca = EgressCA()
    proxy = EgressProxy(EgressPolicy(), resolver=resolve, ca=ca, own_addresses=frozenset())
    credentials = [
        Credential(name="echo", host=r"^echo\.test$", env="TOKEN", value=SECRET),
        Credential(name="basic", host=r"^basic\.test$", auth="basic", username=USER,
                   value=BASIC_SECRET),
    ]  # fmt: skip
    broker = CredentialBroker(credentials, read_credential_values(credentials))
    policy = EgressPolicy(
        allow=[r"^(echo|basic|plain)\.test$"], allow_cidrs=["127.0.0.0/8"], ports=[upstream_port]
    )
    proxy.configure(policy, broker)
    port = await proxy.start_tcp()
    yield Setup(proxy, port, upstream, upstream_port, broker.box_env(port)["TOKEN"])
    await proxy.close()
    ca.close()
    await upstream.close()


@dataclass
class Answer:
    """What the client got: every byte, and those bytes read as HTTP."""

    raw: bytes
    status: int = 0
    reason: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    trailers: list[tuple[bytes, bytes]] = field(default_factory=list)
    complete: bool = False

    def header(self, name: bytes) -> list[bytes]:
        return [value for key, value in self.headers if key == name]


def read_answer(raw: bytes) -> Answer:
    answer = Answer(raw)
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(raw)
    client.receive_data(b"")
    try:
        while True:
            event = client.next_event()
            if isinstance(event, h11.Response):
                answer.status, answer.reason = event.status_code, bytes(event.reason)
                answer.headers = list(event.headers)
            elif isinstance(event, h11.Data):
                answer.body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                answer.trailers, answer.complete = list(event.headers), True
                return answer
            else:
                return answer
    except h11.RemoteProtocolError:  # cut off mid-answer
        return answer


async def fetch(setup: Setup, host: str, case: str, *headers: str) -> Answer:
    """One request through the proxy, as a box would send it; every byte of the answer."""
    where = f"{host}:{setup.upstream_port}"
    request = [f"GET http://{where}/case/{case} HTTP/1.1", f"Host: {where}", *headers,
               "Connection: close", "", ""]  # fmt: skip
    reader, writer = await asyncio.open_connection("127.0.0.1", setup.port)
    writer.write("\r\n".join(request).encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    return read_answer(raw)


async def brokered(setup: Setup, case: str) -> Answer:
    answer = await fetch(setup, "echo.test", case, f"Authorization: Bearer {setup.sentinel}")
    assert setup.upstream.seen[-1] == f"Bearer {SECRET}".encode()  # it had the value to echo
    assert SECRET.encode() not in answer.raw
    return answer


STARS = b"*" * len(SECRET)


@pytest.mark.parametrize(
    "case", ["identity", "gzip", "x-gzip", "deflate", "raw-deflate", "stacked",
             "stacked-headers", "gzip-members", "chunked-gzip"],
)  # fmt: skip
async def test_an_encoded_brokered_answer_is_decoded_then_masked(setup: Setup, case: str) -> None:
    answer = await brokered(setup, case)
    assert (answer.status, answer.complete) == (200, True)
    assert answer.header(b"content-encoding") == []
    assert answer.body.count(b"Bearer " + STARS) == 3
    assert answer.body.startswith(b"padding padding")


async def test_the_status_line_header_names_values_and_trailers_are_masked(setup: Setup) -> None:
    reason = await brokered(setup, "reason")
    assert reason.reason == b"Bearer " + STARS
    header = await brokered(setup, "header")
    assert header.header(b"x-echo") == [b"Bearer " + STARS]
    named = await brokered(setup, "header-name")
    assert (b"x-" + STARS, b"1") in named.headers
    trailer = await brokered(setup, "trailer")
    assert (trailer.body, trailer.trailers, trailer.complete) == (b"see the trailer", [], True)


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_an_answer_the_proxy_cannot_decode_is_refused_with_a_502_naming_the_rule(
    setup: Setup, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "golem.sandbox.egress")
    answer = await brokered(setup, case)
    rule = REFUSED[case][1]
    assert answer.status == 502
    assert answer.body.startswith(b"golem egress: refused (")
    assert rule.encode() in answer.body
    assert b"padding" not in answer.raw  # nothing of the upstream's answer
    assert any(rule in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("case", sorted(CUT))
async def test_a_body_that_stops_decoding_midway_ends_the_connection_there(
    setup: Setup, case: str
) -> None:
    answer = await brokered(setup, case)
    assert answer.status == 200
    assert not answer.complete
    assert len(answer.body) < 70 * 1024**2  # the bomb stops at the proxy's cap (64 MiB)


@pytest.mark.parametrize("case", ["identity", "gzip", "stacked"])
async def test_a_basic_auth_credential_is_masked_in_its_base64_form_too(
    setup: Setup, case: str
) -> None:
    answer = await fetch(setup, "basic.test", case)
    assert setup.upstream.seen[-1] == f"Basic {BASIC_TOKEN}".encode()
    assert BASIC_SECRET.encode() not in answer.raw
    assert BASIC_TOKEN.encode() not in answer.raw
    assert answer.body.count(b"Basic " + b"*" * len(BASIC_TOKEN)) == 3
    assert answer.body.count(f"{USER}:".encode() + b"*" * len(BASIC_SECRET)) == 3


async def test_an_answer_from_a_host_without_credentials_passes_as_it_came(
    setup: Setup,
) -> None:
    """Nothing to mask, so nothing decoded or refused: the box asked for it."""
    answer = await fetch(setup, "plain.test", "br", "Authorization: Bearer mine")
    assert (answer.status, answer.header(b"content-encoding")) == (200, [b"br"])
    assert DECODED.keys().isdisjoint(REFUSED)
