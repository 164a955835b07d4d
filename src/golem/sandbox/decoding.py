"""Output of a call as text: secrets masked on bytes first, then UTF-8 decoded
incrementally, whatever the chunk boundaries."""

from __future__ import annotations

import codecs
from collections.abc import Sequence

from golem.sandbox.masking import SecretMasker

__all__ = ["OutputDecoder", "complete_utf8_end"]


class OutputDecoder:
    """Masks secrets and decodes UTF-8 incrementally for one output stream."""

    def __init__(self, secrets: Sequence[str]) -> None:
        self.masker = SecretMasker(secrets)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self.decoder.decode(self.masker.feed(data))

    def flush(self) -> str:
        return self.decoder.decode(self.masker.flush(), final=True)


def complete_utf8_end(data: bytes) -> int:
    """Length of ``data`` without a trailing, incomplete UTF-8 sequence."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # the lead byte of the last sequence (or ASCII)
            needed = (
                1 if byte < 0x80 else 2 if byte >= 0xC0 and byte < 0xE0 else 3 if byte < 0xF0 else 4
            )
            return len(data) - back if back < needed else len(data)
    return len(data)
