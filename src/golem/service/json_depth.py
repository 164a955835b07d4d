"""How deep a JSON input nests, measured on its bytes as they arrive, before any parser
builds objects of it: Python's ``json`` recurses once per level and gives up with a
RecursionError (a crash where nobody catches it), pydantic's at 200 levels. Every request
body and WebSocket message the server reads is measured here (``limits.BodyLimit``,
``api.sockets.receive``) and refused past ``[server] max_json_depth``.

The measure needs no parser: strings are skipped (with their escapes, across chunks), then
only brackets count. It is linear, and in C but for one step per chunk; a body that is not
JSON at all may be measured too deep, which its parser would refuse anyway.
"""

from __future__ import annotations

import re
from itertools import accumulate

__all__ = ["JsonDepth", "depth_refusal"]

_BODY = rb'[^"\\]*+(?:\\.[^"\\]*+)*+'
"""A string's content up to its end or a lone backslash (possessive: never backtracked)."""
_WHOLE = re.compile(rb'(?:[^"]++|"' + _BODY + rb'")*+', re.DOTALL)
"""What a chunk holds up to a string that goes on past it: its end is that string's quote.
(One pass: searching strings alone would start again at each escaped quote inside one that
does not end, quadratic in the chunk.)"""
_STRING = re.compile(rb'"' + _BODY + rb'"', re.DOTALL)
_STRING_END = re.compile(_BODY + rb'"', re.DOTALL)
"""The rest of a string that began in an earlier chunk, up to its closing quote."""
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")], _STEP[ord("]")] = 1, -1


def depth_refusal(limit: int) -> str:
    """What a refusal for nesting past ``limit`` says."""
    return (
        f"the JSON is nested deeper than {limit} levels (server.max_json_depth): send a "
        "flatter document"
    )


class JsonDepth:
    """The nesting of one JSON document, fed in chunks; ``feed`` answers whether it is
    still within ``limit`` levels."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.depth = 0
        self._in_string = False
        self._escaped = False  # the chunk before ended on a string's lone backslash

    def feed(self, chunk: bytes) -> bool:
        """Take the next chunk; False once the document went deeper than the limit."""
        if not chunk:
            return True
        start = self._string_end(chunk) if self._in_string else 0
        if start is None:
            return True
        rest = chunk[start:]
        whole = _WHOLE.match(rest)
        opened = whole.end() if whole is not None else 0
        if opened < len(rest):  # a string that goes on in the next chunk
            self._in_string = True
            self._escaped = _ends_escaped(rest[opened + 1 :])
        outside = _STRING.sub(b"", rest[:opened])
        return self._count(outside.translate(_BRACKETS, _NOT_BRACKETS))

    def _string_end(self, chunk: bytes) -> int | None:
        """Where the string the last chunk left open ends in ``chunk`` (None: not here)."""
        skip = 1 if self._escaped else 0
        found = _STRING_END.match(chunk, skip)
        if found is None:  # the string goes on
            self._escaped = _ends_escaped(chunk[skip:])
            return None
        self._in_string = self._escaped = False
        return found.end()

    def _count(self, brackets: bytes) -> bool:
        opened = brackets.count(b"[")
        if self.depth + opened > self.limit:  # maybe too deep: measure each step
            deepest = max(accumulate(map(_STEP.__getitem__, brackets), initial=self.depth))
            if deepest > self.limit:
                return False
        self.depth = max(0, self.depth + opened - (len(brackets) - opened))
        return True


def _ends_escaped(content: bytes) -> bool:
    """Whether a string's ``content`` (its escapes paired from its start) ends on a lone
    backslash, which escapes the next chunk's first byte."""
    trailing = len(content) - len(content.rstrip(b"\\"))
    return trailing % 2 == 1
