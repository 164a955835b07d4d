"""jest's and vitest's output. jest: ``FAIL path`` per failing file, then a ``● Suite
(U+203A) test`` block per failing test (its message, a code frame, ``at`` lines); vitest:
``FAIL path > suite > test`` lines, each followed by its error, a ``path:line:col`` line
(after U+276F) and a code frame, blocks closed by ``⎯⎯⎯[1/3]⎯``."""

from __future__ import annotations

import re
import textwrap

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines, merge

__all__ = ["JEST"]

_JEST_FILE = re.compile(r"^ ?FAIL +(\S+)$")
_JEST_TEST = re.compile(r"^  ● (.+)$")
_JEST_END = re.compile(r"^ ?(?:FAIL|PASS) +\S|^Test Suites:|^Summary of all failing tests|^  ● ")
_VITEST_FAIL = re.compile(r"^ ?FAIL +(\S+)(?: > (.+?)| \[ \S+ \])?$")
_VITEST_END = re.compile(r"^ ?FAIL |^⎯{3,}|^ *Test Files ")
_CODE_FRAME = re.compile(r"^[ \t]*(?:>[ \t]*)?(?:\d+[ \t]*)?\|")
_JEST_AT = re.compile(r"^[ \t]*at (?:[^()\n]*\()?([^()\s]+):(\d+):\d+\)?$")
_VITEST_AT = re.compile(r"^[ \t]*\u276f (?:\S+ )?([^\s:]+):(\d+):\d+$")
MESSAGE_CHARS = 800


def recognises(text: str) -> bool:
    """jest's or vitest's summary, or their failure headings."""
    return bool(
        re.search(r"^(?:Tests|Test Suites):[ \t].*\btotal$", text, re.M)
        or re.search(r"^ *(?:Test Files|Tests) +\d+ (?:failed|passed)", text, re.M)
        or re.search(r"^  ● .+$|^ ?FAIL +\S+ > ", text, re.M)
    )


def parse(text: str) -> list[TestFailure]:
    """The failing tests of either runner (a file that failed to run names the file)."""
    lines = text.split("\n")
    return merge(_jest(lines) + _vitest(lines))


def _jest(lines: list[str]) -> list[TestFailure]:
    failures: list[TestFailure] = []
    file: str | None = None
    for index, line in enumerate(lines):
        if heading := _JEST_FILE.match(line):
            file = heading.group(1)
        elif (test := _JEST_TEST.match(line)) and test.group(1) != "Console":
            body = _until(lines, index + 1, _JEST_END)
            name = test.group(1)
            if name == "Test suite failed to run" and file:
                name = f"{file} (failed to run)"
            failures.append(_failure(name, body, _JEST_AT, file))
    return failures


def _vitest(lines: list[str]) -> list[TestFailure]:
    failures: list[TestFailure] = []
    names: list[tuple[str, str]] = []
    for index, line in enumerate(lines):
        heading = _VITEST_FAIL.match(line)
        if heading is None or not (heading.group(2) or "[" in line):
            continue
        file, test = heading.group(1), heading.group(2)
        names.append((f"{file} > {test}" if test else f"{file} (failed to run)", file))
        if _VITEST_FAIL.match(lines[index + 1] if index + 1 < len(lines) else ""):
            continue  # the next heading shares this error
        body = _until(lines, index + 1, _VITEST_END)
        failures.extend(_failure(name, body, _VITEST_AT, file) for name, file in names)
        names = []
    return failures


def _until(lines: list[str], start: int, end: re.Pattern[str]) -> list[str]:
    body = []
    for index in range(start, len(lines)):
        if end.match(lines[index]):
            break
        body.append(lines[index])
    return body


def _failure(name: str, body: list[str], at: re.Pattern[str], file: str | None) -> TestFailure:
    """A test's message (its lines without code frames and stack), and where: the first
    stack line in its own file, else the first outside node_modules."""
    places = [(m.group(1), int(m.group(2))) for line in body if (m := at.match(line))]
    own = [p for p in places if file and p[0].endswith(file)] or [
        p for p in places if "node_modules" not in p[0]
    ]
    message = [line for line in body if not (_CODE_FRAME.match(line) or at.match(line))]
    text = first_lines(textwrap.dedent("\n".join(message)).strip(), MESSAGE_CHARS)
    where_file, where_line = own[0] if own else (file, None)
    return TestFailure(name=name, message=text, file=where_file, line=where_line)


JEST = Format(
    name="jest/vitest",
    hints=("jest", "vitest", "npm test", "yarn test", "pnpm test"),
    recognises=recognises,
    parse=parse,
)
