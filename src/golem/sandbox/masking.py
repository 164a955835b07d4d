"""Secret masking for byte streams, correct when a secret is split across chunks."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = ["MASK", "SecretMasker"]

MASK = b"***"


class SecretMasker:
    """Replaces every secret in a stream with ``***``.

    Feed chunks with :meth:`feed`; bytes that might be the start of a secret are held back
    until the next chunk (or :meth:`flush`) shows whether they are.
    """

    def __init__(self, secrets: Iterable[str | bytes], *, keep_length: bool = False) -> None:
        """``keep_length`` masks each secret with as many ``*`` as it has bytes, so the
        length of what passes is unchanged (an HTTP body with a Content-Length)."""
        values = {s.encode() if isinstance(s, str) else s for s in secrets}
        self._replace: bytes | Callable[[re.Match[bytes]], bytes] = (
            (lambda match: b"*" * len(match.group())) if keep_length else MASK
        )
        self._secrets = sorted((v for v in values if v), key=len, reverse=True)
        self._pattern = (
            re.compile(b"|".join(re.escape(s) for s in self._secrets)) if self._secrets else None
        )
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        """Return the masked bytes that are safe to emit now."""
        if self._pattern is None:
            return chunk
        data = self._pending + chunk
        cut = len(data) - self._partial_suffix(data)
        for match in self._pattern.finditer(data):
            if match.start() < cut < match.end():
                cut = match.start()
                break
        self._pending = data[cut:]
        return self._pattern.sub(self._replace, data[:cut])

    def flush(self) -> bytes:
        """Return what is held back at the end of the stream, masked."""
        data, self._pending = self._pending, b""
        return self._pattern.sub(self._replace, data) if self._pattern else data

    def mask(self, data: bytes) -> bytes:
        """Mask a complete piece of output in one go."""
        return self._pattern.sub(self._replace, data) if self._pattern else data

    def mask_text(self, text: str) -> str:
        """Mask a complete string (error messages and the like)."""
        return self.mask(text.encode()).decode(errors="replace") if self._pattern else text

    @property
    def longest(self) -> int:
        """Length in bytes of the longest secret (0 without secrets)."""
        return len(self._secrets[0]) if self._secrets else 0

    def window(self, data: bytes, start: int, offset: int, final: bool) -> tuple[bytes, int]:
        """Mask a window of a stream read at random offsets (a background process's log).

        ``data`` holds the stream from byte ``start`` on; the caller has already been given
        everything before ``offset``. Returns what is safe to give from ``offset`` on, and
        the offset to continue from: unless ``final``, a tail that may begin a secret is
        held back. Read again from up to ``longest - 1`` bytes before ``offset`` so that a
        secret straddling ``offset`` is seen whole.
        """
        matches = list(self._pattern.finditer(data)) if self._pattern else []
        cut = len(data) if final else len(data) - self._partial_suffix(data)
        for match in matches:
            if match.start() < cut < match.end():
                cut = match.start()
        skip = max(offset - start, 0)
        out = bytearray()
        position = skip
        for match in matches:
            if match.end() <= skip:
                continue
            if match.start() >= cut:
                break
            out += data[position : match.start()]
            out += self._replace if isinstance(self._replace, bytes) else self._replace(match)
            position = match.end()
        out += data[position:cut]
        return bytes(out), start + max(cut, skip)

    def _partial_suffix(self, data: bytes) -> int:
        """Length of the longest suffix of ``data`` that is a proper prefix of a secret."""
        longest = 0
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(data)), longest, -1):
                if data.endswith(secret[:size]):
                    longest = size
                    break
        return longest
