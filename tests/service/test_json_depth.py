"""The nesting measure of the server's JSON inputs: brackets inside strings (escaped quotes
and backslashes included) never count, wherever the chunks of a body are cut, and a
document is refused exactly when it nests deeper than the limit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from golem.service.json_depth import JsonDepth

DOCUMENTS: list[Any] = [
    {"a": [1, {"b": [[2]]}], "c": "[[[[{{{{"},
    ["\\", '"[', '\\"[[', "\\\\", {'k"[': ["]]]", "\\u005b"]}],
    {"text": 'a \\" quoted \\\\ [ and ] { }', "deep": [[[[[[]]]]]]},
    [[], {}, [[], [{}]], "}}}", '"', '\\\\"]'],
    "plain [ string",
    {"emoji": "✓ [ naïve ]", "nested": {"x": {"y": {"z": []}}}},
]


def depth(value: Any) -> int:
    """How deep ``value`` nests, as a parser recurses into it."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def fed(chunks: list[bytes], limit: int) -> bool:
    measure = JsonDepth(limit)
    return all([measure.feed(chunk) for chunk in chunks])


@pytest.mark.parametrize("document", DOCUMENTS)
def test_a_document_is_refused_exactly_past_its_depth_however_its_chunks_are_cut(
    document: Any,
) -> None:
    body = json.dumps(document, ensure_ascii=False).encode()
    deepest = depth(document)
    for first in range(len(body) + 1):
        for second in range(first, len(body) + 1, 3):
            chunks = [body[:first], body[first:second], body[second:]]
            assert fed(chunks, deepest), (chunks, deepest)
            if deepest > 0:
                assert not fed(chunks, deepest - 1), (chunks, deepest)


def test_every_byte_a_chunk_of_its_own() -> None:
    body = b'{"a": "\\\\\\"[[[[", "b": [[["\\\\"]]]}'
    assert fed([bytes([b]) for b in body], 4)
    assert not fed([bytes([b]) for b in body], 3)


def test_depth_is_kept_across_chunks() -> None:
    measure = JsonDepth(3)
    assert measure.feed(b"[[")
    assert measure.feed(b"[]]")
    assert not measure.feed(b"[[[[")
