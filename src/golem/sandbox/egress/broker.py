"""Credential brokering: real values stay on the host, boxes hold sentinels.

For one box session, each configured credential gets a fresh random sentinel. The box's
environment carries sentinels only; on a request to a host a credential applies to, and to
no other, the proxy swaps the sentinel for the real value (or sets basic auth), and masks
the real value (and the form golem sent it in) in what comes back, so an upstream that
echoes it cannot leak it. An answer's content encoding cannot hide it either: gzip and
deflate are decoded before masking, any other encoding is refused (``AnswerDecoder``).
"""

from __future__ import annotations

import os
import secrets
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from golem.core.errors import ConfigError
from golem.core.masking import SecretMasker, basic_auth
from golem.core.network import Credential

__all__ = [
    "ROUTE_PREFIX",
    "AnswerDecoder",
    "Brokered",
    "CredentialBroker",
    "Unmaskable",
    "answer_decoder",
    "read_credential_values",
]

ROUTE_PREFIX = "/_golem/"
Headers = list[tuple[bytes, bytes]]


def read_credential_values(credentials: Sequence[Credential]) -> dict[str, str]:
    """The real value of each credential, from its env var, file or config."""
    values = {}
    for credential in credentials:
        if credential.value is not None:
            value = credential.value.get_secret_value()
        elif credential.from_env is not None:
            value = os.environ.get(credential.from_env, "")
            if not value:
                raise ConfigError(
                    f"credential {credential.name!r}: the host variable {credential.from_env} "
                    "is not set; export it where golem runs"
                )
        else:
            assert credential.from_file is not None
            try:
                value = credential.from_file.read_text().strip()
            except OSError as exc:
                raise ConfigError(
                    f"credential {credential.name!r}: cannot read {credential.from_file}: "
                    f"{exc.strerror}"
                ) from None
        if not value or "\n" in value or "\r" in value:
            raise ConfigError(f"credential {credential.name!r}: its value is empty or multi-line")
        values[credential.name] = value
    return values


@dataclass(frozen=True)
class Brokered:
    """One credential of a session: its settings, real value and sentinel."""

    credential: Credential
    value: str
    sentinel: str

    @property
    def secrets(self) -> list[str]:
        """The real value, and the basic-auth token that carries it (what an upstream
        echoing the Authorization header sends back)."""
        if self.credential.auth == "basic":
            return [self.value, basic_auth(self.credential.username, self.value)]
        return [self.value]

    def apply(self, headers: Headers) -> Headers:
        """The request headers with this credential put in."""
        if self.credential.auth == "basic":
            token = basic_auth(self.credential.username, self.value).encode()
            kept = [(k, v) for k, v in headers if k.lower() != b"authorization"]
            return [*kept, (b"Authorization", b"Basic " + token)]
        name = self.credential.header.lower().encode()
        sentinel, value = self.sentinel.encode(), self.value.encode()
        return [(k, v.replace(sentinel, value) if k.lower() == name else v) for k, v in headers]


class CredentialBroker:
    """The credentials of one box session."""

    def __init__(self, credentials: Sequence[Credential], values: dict[str, str]) -> None:
        self.items = [
            Brokered(c, values[c.name], f"golem-sentinel-{c.name}-{secrets.token_hex(16)}")
            for c in credentials
        ]

    def __bool__(self) -> bool:
        return bool(self.items)

    def for_host(self, host: str) -> list[Brokered]:
        """The credentials that apply to ``host``."""
        return [item for item in self.items if item.credential.matches(host)]

    def by_route(self, name: str) -> Brokered | None:
        """The credential whose plain-HTTP route is ``/_golem/<name>``."""
        for item in self.items:
            if item.credential.name == name and item.credential.upstream is not None:
                return item
        return None

    @property
    def values(self) -> list[str]:
        """The real values and the forms golem sends them in (for masking everything that
        comes back)."""
        return [secret for item in self.items for secret in item.secrets]

    def box_env(self, proxy_port: int) -> dict[str, str]:
        """What the box's environment gets: sentinels and plain-HTTP base URLs."""
        env = {}
        for item in self.items:
            credential = item.credential
            if credential.env is not None:
                env[credential.env] = item.sentinel
            if credential.base_url_env is not None:
                env[credential.base_url_env] = (
                    f"http://127.0.0.1:{proxy_port}{ROUTE_PREFIX}{credential.name}"
                )
        return env


def rewrite_request_headers(headers: Headers, applied: Sequence[Brokered], host: str) -> Headers:
    """Headers for the upstream: credentials in, proxy headers out, and a request for an
    uncompressed answer (which an upstream may ignore: see ``answer_decoder``)."""
    dropped = (b"proxy-authorization", b"proxy-connection", b"accept-encoding", b"host")
    result = [(k, v) for k, v in headers if k.lower() not in dropped]
    for item in applied:
        result = item.apply(result)
    return [(b"Host", host.encode()), *result, (b"Accept-Encoding", b"identity")]


def response_masker(applied: Sequence[Brokered]) -> SecretMasker:
    """Masks the real values in an answer without changing its length."""
    return SecretMasker([secret for item in applied for secret in item.secrets], keep_length=True)


DECODED_CODINGS = frozenset({b"gzip", b"x-gzip", b"deflate"})
MAX_LAYERS = 4
PIECE = 256 * 1024
EXPANSION_FREE = 64 * 1024**2
MAX_EXPANSION = 100
GZIP_WBITS = 16 + zlib.MAX_WBITS


class Unmaskable(Exception):
    """A brokered answer the proxy cannot mask, so never hands to the box; ``rule`` says
    why."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


def content_codings(headers: Headers) -> list[bytes]:
    """An answer's content codings in the order they were applied (identity left out)."""
    codings = [
        token.strip().lower()
        for name, value in headers
        if name.lower() == b"content-encoding"
        for token in value.split(b",")
    ]
    return [coding for coding in codings if coding and coding != b"identity"]


def answer_decoder(headers: Headers, masker: SecretMasker) -> AnswerDecoder | None:
    """The decoder of a brokered answer's body, or None when it is not encoded. Raises
    ``Unmaskable`` for an encoding the proxy cannot decode (so could not mask)."""
    codings = content_codings(headers)
    if not codings:
        return None
    for coding in codings:
        if coding not in DECODED_CODINGS:
            shown = masker.mask(coding[:40]).decode("latin-1")
            raise Unmaskable(
                f"answer encoding {shown!r} from a brokered host cannot be masked; the proxy "
                "decodes gzip and deflate only"
            )
    if len(codings) > MAX_LAYERS:
        raise Unmaskable(
            f"answer from a brokered host encoded {len(codings)} times; the proxy decodes at "
            f"most {MAX_LAYERS} layers"
        )
    return AnswerDecoder(codings)


class AnswerDecoder:
    """Decodes a gzip/deflate body (stacked encodings too, the last applied first) in
    pieces of at most ``PIECE`` bytes. Past ``EXPANSION_FREE`` decoded bytes, the decoded
    size must stay within ``MAX_EXPANSION`` times the encoded size, so a small answer cannot
    make the proxy inflate gigabytes. Raises ``Unmaskable`` for a body it cannot decode."""

    def __init__(self, codings: Sequence[bytes]) -> None:
        self._layers = [_Inflater(coding) for coding in reversed(codings)]
        self._encoded = self._decoded = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of the next bytes of the body."""
        self._encoded += len(data)
        try:
            yield from self._through(0, data)
        except zlib.error:
            raise Unmaskable("answer body is not valid gzip or deflate") from None

    def flush(self) -> Iterator[bytes]:
        """The decoded pieces still held at the end of the body."""
        try:
            for index, layer in enumerate(self._layers):
                for piece in layer.flush():
                    yield from self._through(index + 1, piece)
        except zlib.error:
            raise Unmaskable("answer body is not valid gzip or deflate") from None

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        if index == len(self._layers):
            self._decoded += len(data)
            if self._decoded > max(EXPANSION_FREE, MAX_EXPANSION * self._encoded):
                raise Unmaskable(
                    f"answer expands more than {MAX_EXPANSION} times past "
                    f"{EXPANSION_FREE // 1024**2} MiB when decoded"
                )
            if data:
                yield data
            return
        for piece in self._layers[index].feed(data):
            yield from self._through(index + 1, piece)


class _Inflater:
    """One gzip (several members allowed) or deflate (zlib or raw) layer, streamed."""

    def __init__(self, coding: bytes) -> None:
        self._gzip = coding != b"deflate"
        self._head = b""  # deflate's first bytes, until they show zlib's header or none
        self._z = zlib.decompressobj(GZIP_WBITS) if self._gzip else None

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._z is None:
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head = self._head, b""
            self._z = zlib.decompressobj(_deflate_wbits(data))
        yield from self._inflate(data)

    def flush(self) -> Iterator[bytes]:
        if self._z is None:
            if not self._head:
                return
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            yield from self._inflate(self._head)
        if tail := self._z.flush():  # small: _inflate drained what it could
            yield tail

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        assert self._z is not None
        while True:
            if self._z.eof:
                data = self._z.unused_data + data
                if not data:
                    return
                if not self._gzip:
                    raise zlib.error("data after the end of the deflate stream")
                self._z = zlib.decompressobj(GZIP_WBITS)  # the next gzip member
            out = self._z.decompress(data, PIECE)
            data = self._z.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < PIECE and not self._z.eof:
                return


def _deflate_wbits(head: bytes) -> int:
    """zlib's wbits for a deflate body: HTTP's deflate is zlib-wrapped, but some servers
    send raw deflate."""
    wrapped = head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
    return zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS
