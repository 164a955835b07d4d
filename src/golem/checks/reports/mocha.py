"""mocha's output (its spec reporter, the default): after ``N failing``, a block per
failure, ``1) suite`` then the test's title indented on the next lines up to one ending in
``:``, its error, and its ``at`` lines."""

from __future__ import annotations

import re
import textwrap

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines, merge

__all__ = ["MOCHA"]

_FAILING = re.compile(r"^ +\d+ failing$", re.M)
_BLOCK = re.compile(r"^  (\d+)\) (.*)$")
_AT = re.compile(r"^[ \t]*at (?:[^()\n]*\()?([^()\s]+):(\d+):\d+\)?$")
MESSAGE_CHARS = 800
MAX_TITLE_LINES = 10


def recognises(text: str) -> bool:
    """mocha's ``N passing (12ms)`` and ``N failing`` lines."""
    return bool(_FAILING.search(text) and re.search(r"^ +\d+ passing \(\d+m?s\)$", text, re.M))


def parse(text: str) -> list[TestFailure]:
    """Each numbered failure after the last ``N failing`` line, named by its titles."""
    starts = list(_FAILING.finditer(text))
    lines = text[starts[-1].end() :].split("\n") if starts else []
    heads = [index for index, line in enumerate(lines) if _BLOCK.match(line)]
    failures = []
    for number, start in enumerate(heads):
        end = heads[number + 1] if number + 1 < len(heads) else len(lines)
        failures.append(_failure(lines[start:end]))
    return merge(failures)


def _failure(block: list[str]) -> TestFailure:
    head = _BLOCK.match(block[0])
    titles = [head.group(2) if head else block[0]]
    body_start = 1
    while not titles[-1].endswith(":") and body_start < min(len(block), MAX_TITLE_LINES):
        titles.append(block[body_start].strip())
        body_start += 1
    name = " ".join(title for title in titles if title).removesuffix(":")
    body = block[body_start:]
    places = [(m.group(1), int(m.group(2))) for line in body if (m := _AT.match(line))]
    own = [p for p in places if "node_modules" not in p[0] and not p[0].startswith("node:")]
    message = [line for line in body if not _AT.match(line)]
    text = first_lines(textwrap.dedent("\n".join(message)).strip(), MESSAGE_CHARS)
    file, line = own[0] if own else (None, None)
    return TestFailure(name=name, message=text, file=file, line=line)


MOCHA = Format(name="mocha", hints=("mocha",), recognises=recognises, parse=parse)
