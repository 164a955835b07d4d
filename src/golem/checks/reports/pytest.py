"""pytest's output: the short test summary names the failing tests (``FAILED
path::test - message``), the FAILURES and ERRORS sections hold their assertion lines
(``E   ...``) and where they failed (``path:line: Error``). Passing tests are named by the
summary's ``PASSED path::test`` lines (``-rA``) or the verbose ``path::test PASSED`` ones
(``-v``); an expected failure (``XFAIL``) counts as passing."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines, merge

__all__ = ["PYTEST"]

_BANNER = re.compile(
    r"^=+ (?:test session starts|FAILURES|ERRORS|short test summary info) =+$"
    r"|^=+ [^=\n]{0,300}\b\d+ (?:failed|passed|errors?)\b",
    re.MULTILINE,
)
_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)
_SECTION_START = re.compile(r"^=+ (?:FAILURES|ERRORS) =+$")
_HEADER = re.compile(r"^_{3,} (.+?) _{3,}$")
_BANNER_LINE = re.compile(r"^={3,} .* ={3,}$")
_WHERE = re.compile(r"^(\S+?):(\d+): (?:in \S+|[\w.]+)$")
_PASSED = re.compile(r"^(?:PASSED|XFAIL) (\S+)|^(\S+::\S+) (?:PASSED|XFAIL)\b", re.MULTILINE)
_ERROR_AT = re.compile(r"^ERROR (?:at (?:setup|teardown) of |collecting )|^\[doctest\] ")
MESSAGE_CHARS = 800


@dataclass
class _Section:
    header: str
    lines: list[str]


def recognises(text: str) -> bool:
    """pytest's banners, or its summary lines naming a test by node id."""
    return bool(_BANNER.search(text)) or bool(re.search(r"^FAILED \S+::\S", text, re.M))


def parse(text: str) -> list[TestFailure]:
    """The failing tests: from the short summary when pytest printed one, each with its
    section's message; else from the sections' headers."""
    sections = [_failure(section) for section in _sections(text)]
    by_header = {key: failure for failure in sections for key in _keys(failure.name)}
    summary = [_summary_failure(match, by_header) for match in _SUMMARY.finditer(text)]
    return merge(summary or sections)


def passes(text: str) -> list[str]:
    """The tests the output says passed (node ids, in order, once each)."""
    found = (match.group(1) or match.group(2) for match in _PASSED.finditer(text))
    return list(dict.fromkeys(found))


def _sections(text: str) -> list[_Section]:
    """The FAILURES and ERRORS sections' parts, one per test, in one pass (the output may
    begin inside them: its tail is what was kept)."""
    sections: list[_Section] = []
    inside, current = True, None
    for line in text.split("\n"):
        if _SECTION_START.match(line):
            inside, current = True, None
        elif _BANNER_LINE.match(line):
            inside = False
        elif inside and (header := _HEADER.match(line)):
            current = _Section(header.group(1), [])
            sections.append(current)
        elif inside and current is not None:
            current.lines.append(line)
    return sections


def _failure(section: _Section) -> TestFailure:
    asserted = [line[1:] for line in section.lines if line.startswith("E ") or line == "E"]
    if not asserted:  # pytest.fail(), a doctest: the section's last lines say it
        asserted = [line for line in section.lines if line.strip() and not _WHERE.match(line)]
        asserted = asserted[-8:]
    where = [match for line in section.lines if (match := _WHERE.match(line))]
    file, line = (where[-1].group(1), int(where[-1].group(2))) if where else (None, None)
    message = first_lines(textwrap.dedent("\n".join(asserted)), MESSAGE_CHARS)
    return TestFailure(name=section.header, message=message, file=file, line=line)


def _keys(header: str) -> tuple[str, str]:
    """A section's header as the part of a node id after its file (a collection error's:
    the file)."""
    test = _ERROR_AT.sub("", header)
    return test, test.replace(".", "::")


def _summary_failure(match: re.Match[str], by_header: dict[str, TestFailure]) -> TestFailure:
    node_id, short = match.group(1), match.group(2) or ""
    _, _, test = node_id.partition("::")
    found = by_header.get(test) if test else by_header.get(node_id)
    if found is None:
        return TestFailure(name=node_id, message=short, file=node_id.split("::")[0])
    return found.model_copy(
        update={
            "name": node_id,
            "message": found.message or short,
            "file": found.file or node_id.split("::")[0],
        }
    )


PYTEST = Format(
    name="pytest",
    hints=("pytest", "py.test", "tox", "nox", "hatch"),
    recognises=recognises,
    parse=parse,
    passes=passes,
)
