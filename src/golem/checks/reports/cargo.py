"""``cargo test``'s output (libtest): ``test path::name ... FAILED`` lines, a ``---- name
stdout ----`` section per failure holding its panic (``thread 'name' panicked at
src/lib.rs:7:17:`` then the message), and rustc's errors when the crate did not compile;
``test path::name ... ok`` for each test that passed."""

from __future__ import annotations

import re

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines, merge

__all__ = ["CARGO_TEST"]

_FAILED = re.compile(r"^test (\S+)(?: - should panic)? \.\.\. FAILED$", re.M)
_OK = re.compile(r"^test (\S+)(?: - should panic)? \.\.\. ok$", re.M)
_SECTION = re.compile(
    r"^---- (\S+) stdout ----\n(.*?)(?=^---- \S+ stdout ----$|^failures:$|\Z)", re.M | re.S
)
_PANIC = re.compile(
    r"panicked at (?P<file>[^\s:]+):(?P<line>\d+):\d+:\n(?P<message>.*?)"
    r"(?=^stack backtrace:|^note: |\Z)"
    r"|panicked at '(?P<old>.*?)', (?P<oldfile>[^\s:]+):(?P<oldline>\d+):\d+",  # before 1.73
    re.M | re.S,
)
_NOT_PANICKED = re.compile(r"^note: test did not panic as expected at ([^\s:]+):(\d+)", re.M)
_UNCOMPILED = re.compile(r"^error: could not compile `([^`]+)`", re.M)
_RUSTC_ERROR = re.compile(
    r"^error(?:\[E\d+\])?: (?!could not compile).*\n(?:[ \d]*[|=-].*\n)*", re.M
)
MESSAGE_CHARS = 800


def recognises(text: str) -> bool:
    """libtest's result lines, or cargo's note that a crate did not compile."""
    return bool(
        _FAILED.search(text)
        or re.search(r"^test result: (?:ok|FAILED)\. \d+ passed", text, re.M)
        or _UNCOMPILED.search(text)
    )


def parse(text: str) -> list[TestFailure]:
    """The crates that did not compile, then the failing tests with their panics."""
    sections = {
        match.group(1): _failure(match.group(1), match.group(2))
        for match in _SECTION.finditer(text)
    }
    named = [sections.get(name) or TestFailure(name=name) for name in _FAILED.findall(text)]
    return _compile_errors(text) + merge(named + list(sections.values()))


def passes(text: str) -> list[str]:
    """The tests libtest says passed."""
    return list(dict.fromkeys(_OK.findall(text)))


def _failure(name: str, section: str) -> TestFailure:
    if panic := _PANIC.search(section):
        if panic.group("old") is not None:
            message, file, line = panic.group("old"), panic.group("oldfile"), panic.group("oldline")
        else:
            message, file, line = panic.group("message"), panic.group("file"), panic.group("line")
        return TestFailure(
            name=name, message=first_lines(message, MESSAGE_CHARS), file=file, line=int(line)
        )
    if missed := _NOT_PANICKED.search(section):
        return TestFailure(
            name=name,
            message="test did not panic as expected",
            file=missed.group(1),
            line=int(missed.group(2)),
        )
    return TestFailure(name=name, message=first_lines(section, MESSAGE_CHARS))


def _compile_errors(text: str) -> list[TestFailure]:
    crates = dict.fromkeys(_UNCOMPILED.findall(text))
    if not crates:
        return []
    errors = "\n".join(error.group(0) for error in _RUSTC_ERROR.finditer(text))
    where = re.search(r"^[ \t]*--> ([^\s:]+):(\d+)", errors, re.M)
    message = first_lines(errors or "did not compile", MESSAGE_CHARS, max_lines=20)
    return [
        TestFailure(
            name=f"{crate} (did not compile)",
            message=message,
            file=where.group(1) if where else None,
            line=int(where.group(2)) if where else None,
        )
        for crate in crates
    ]


CARGO_TEST = Format(
    name="cargo test",
    hints=("cargo", "nextest"),
    recognises=recognises,
    parse=parse,
    passes=passes,
)
