"""A brokered answer's body, decoded so that it can be masked: gzip and deflate (stacked,
several gzip members, zlib-wrapped or raw deflate), streamed in pieces with its expansion
capped; any other content encoding is refused (``Unmaskable``), since what the proxy cannot
read it cannot mask."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence

from golem.core.errors import Unmaskable
from golem.core.masking import SecretMasker

__all__ = ["AnswerDecoder", "answer_decoder", "content_codings"]

Headers = list[tuple[bytes, bytes]]

DECODED_CODINGS = frozenset({b"gzip", b"x-gzip", b"deflate"})
MAX_LAYERS = 4
PIECE = 256 * 1024
EXPANSION_FREE = 64 * 1024**2
MAX_EXPANSION = 100
GZIP_WBITS = 16 + zlib.MAX_WBITS


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
