"""The one sanitiser: from any text, every escape sequence (with its payload), control
character and invisible format character is gone, and what a person reads stays; in
decoded JSON, every string (keys too), however deep."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.core.ansi import clean, clean_json, plain

SEQUENCES = {
    "CSI colour": "\x1b[31;1m",
    "CSI cursor up and erase": "\x1b[2A\x1b[2K",
    "CSI private mode": "\x1b[?1049h",
    "C1 CSI": "\x9b2J",
    "OSC 8 hyperlink, BEL": "\x1b]8;;https://evil.example\x07",
    "OSC 8 hyperlink, ST": "\x1b]8;;https://evil.example\x1b\\",
    "OSC 52 clipboard": "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07",
    "OSC 0 title": "\x1b]0;pwned\x07",
    "C1 OSC": "\x9d0;pwned\x9c",
    "DCS": "\x1bPq#0;2;0;0;0\x1b\\",
    "C1 DCS": "\x90q#0\x9c",
    "APC": "\x1b_Gf=100;AAAA\x1b\\",
    "PM": "\x1b^private\x1b\\",
    "SOS": "\x1bXstring\x1b\\",
    "two-byte escape": "\x1bc",
    "charset": "\x1b(0",
}
INVISIBLE = [
    chr(cp)
    for cp in range(0x110000)
    if unicodedata.category(chr(cp)) == "Cf" and cp not in (0x200C, 0x200D)
]
CONTROLS = [chr(cp) for cp in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(cp) not in "\t\n\r"]
TEXT = st.lists(
    st.sampled_from(
        [
            *["a", " ", "\n", "\t", "\r", "[", ";", "]", "\\", "\x07"],
            *SEQUENCES.values(),
            *CONTROLS,
            *INVISIBLE[:40],
        ]
    )
).map("".join)


def shown(text: str) -> list[str]:
    """The characters of ``text`` a terminal or a renderer could act on or hide."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Cs") and c not in "\n\t"]


@pytest.mark.parametrize("sequence", list(SEQUENCES.values()), ids=list(SEQUENCES))
def test_an_escape_sequence_goes_with_its_payload(sequence: str) -> None:
    assert clean(f"job{sequence}name") == "jobname"


def test_every_control_character_but_newline_and_tab_goes() -> None:
    assert clean("a" + "".join(CONTROLS) + "\tb\nc") == "a\tb\nc"


def test_every_invisible_format_character_goes_but_the_joiners() -> None:
    assert len(INVISIBLE) > 150
    assert clean("a" + "".join(INVISIBLE) + "b") == "ab"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert clean(f"{family} \u0646\u0627\u200c\u0645") == f"{family} \u0646\u0627\u200c\u0645"


def test_bidi_overrides_and_tags_can_hide_nothing() -> None:
    hidden = "safe\u202e\u2066txet\u2069\u202c" + "".join(chr(0xE0000 + ord(c)) for c in "rm -rf")
    assert clean(hidden) == "safetxet"


def test_line_breaks_become_newlines_and_one_line_text_has_none() -> None:
    assert clean("a\r\nb\rc\u2028d\u2029e") == "a\nb\nc\nd\ne"
    assert clean("build\n@everyone\tnow", multiline=False) == "build @everyone now"


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    decoded = json.loads('"a\\ud800b"')
    assert clean(decoded) == "a\ufffdb"
    clean(decoded).encode()  # storable


def test_ordinary_text_comes_back_as_the_same_object() -> None:
    text = "Run tests (ubuntu-latest, 3.12) · naïve café 日本 😀"
    assert clean(text) is text


@given(TEXT)
def test_nothing_acting_or_hidden_is_left_in_any_text(text: str) -> None:
    assert shown(clean(text)) == []
    assert shown(clean(text, multiline=False)) == []
    assert "\n" not in clean(text, multiline=False)
    assert shown(plain(text)) == []


def test_every_string_of_decoded_json_is_cleaned_keys_too() -> None:
    payload = json.loads(
        '{"name\\u001b[1m": "job\\u001b]8;;x\\u0007", "steps": [{"name": "a\\u009b2Jb"}],'
        ' "n": 3, "ok": true, "none": null}'
    )
    assert clean_json(payload) == {
        "name": "job",
        "steps": [{"name": "ab"}],
        "n": 3,
        "ok": True,
        "none": None,
    }


def test_json_nested_as_deep_as_python_decodes_is_cleaned_without_recursion() -> None:
    depth = 100_000
    nested: list[object] = ["\x1b[31mred"]
    for _ in range(depth):
        nested = [nested]
    cleaned = clean_json(nested)
    for _ in range(depth):
        cleaned = cleaned[0]
    assert cleaned == ["red"]


def test_an_unended_string_sequence_loses_only_its_start() -> None:
    assert clean("\u00e2\u20ac\x9d quoted, and the rest") == "\u00e2\u20ac quoted, and the rest"
    assert clean("title \x1b]0;no end here") == "title 0;no end here"
