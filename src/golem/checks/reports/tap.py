"""TAP, as ``node --test`` prints it when not on a terminal (and tape, prove, ...): ``not
ok 3 - name`` lines, nested under ``# Subtest: name`` by indentation, each followed by a
YAML block holding ``location`` and ``error``; and the ``✖ failing tests:`` recap that
``node --test``'s spec reporter prints on a terminal; bats tells a failure in ``#``
comments after it. An ``ok 2 - name`` line (not a ``# SKIP`` or ``# TODO``) names a test
that passed."""

from __future__ import annotations

import re
import textwrap

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines, merge

__all__ = ["TAP"]

_SUBTEST = re.compile(r"^([ \t]*)# Subtest: (.+)$")
_NOT_OK = re.compile(r"^([ \t]*)not ok \d+(?: -)? (.*?)(?: # (TODO|SKIP)\b.*)?$")
_OK = re.compile(r"^([ \t]*)ok \d+(?: -)? (.*?)(?: # (TODO|SKIP)\b.*)?$")
_LOCATION = re.compile(r"^[ \t]*location: '?(.+?):(\d+):\d+'?$", re.M)
_ERROR = re.compile(r"^([ \t]*)error: (?:\|-?\n((?:\1 .*\n|\n)*)|(.*)$)", re.M)
_SPEC = re.compile(r"^test at (\S+?):(\d+):\d+\n✖ (.+?) \([\d.]+m?s\)\n((?:[ \t]+.*\n|\n)*)", re.M)
MESSAGE_CHARS = 800
MAX_BLOCK_LINES = 200
_IN_FILE = re.compile(r"^\(in (?:test )?file (\S+), line (\d+)\)$")
_NEXT_TEST = re.compile(r"^[ \t]*(?:not ok |ok |# Subtest: |\d+\.\.\d+$)")


def recognises(text: str) -> bool:
    """A TAP version line or a failing ``not ok``, or the spec reporter's recap."""
    return bool(re.search(r"^TAP version \d+$|^[ \t]*not ok \d+|^✖ failing tests:$", text, re.M))


def parse(text: str) -> list[TestFailure]:
    """Failing tests named ``suite > test``, without suites that failed only because a
    test in them did."""
    failures = _tap(text.split("\n")) + _spec(text)
    parents = {parent for f in failures for parent in _parents(f.name)}
    return merge([f for f in failures if not _only_failed_below(f, parents)])


def passes(text: str) -> list[str]:
    """The tests an ``ok`` line names (``suite > test``), but suites whose tests are named
    too."""
    names = [name for name, ok, _ in _results(text.split("\n")) if ok]
    parents = {parent for name in names for parent in _parents(name)}
    return list(dict.fromkeys(name for name in names if name not in parents))


def _tap(lines: list[str]) -> list[TestFailure]:
    failures = []
    for name, ok, index in _results(lines):
        if ok:
            continue
        if block := _yaml_block(lines, index + 1):
            failures.append(_failure(name, block))
        else:
            failures.append(_commented(name, lines, index + 1))
    return failures


def _results(lines: list[str]) -> list[tuple[str, bool, int]]:
    """Each ``ok`` or ``not ok`` line but skipped and to-do ones: its test's name under
    its open subtests, whether it passed, and its line's index."""
    results, open_subtests = [], list[tuple[int, str]]()
    for index, line in enumerate(lines):
        if subtest := _SUBTEST.match(line):
            indent = len(subtest.group(1))
            open_subtests = [(i, n) for i, n in open_subtests if i < indent]
            open_subtests.append((indent, subtest.group(2)))
        elif (said := _NOT_OK.match(line) or _OK.match(line)) and not said.group(3):
            indent = len(said.group(1))
            parents = [name for i, name in open_subtests if i < indent]
            name = " > ".join([*parents, said.group(2)])
            results.append((name, not line.lstrip().startswith("not ok"), index))
    return results


def _yaml_block(lines: list[str], start: int) -> str:
    if start >= len(lines) or lines[start].strip() != "---":
        return ""
    block = []
    for index in range(start + 1, min(len(lines), start + 1 + MAX_BLOCK_LINES)):
        if lines[index].strip() == "..." or _NEXT_TEST.match(lines[index]):
            break
        block.append(lines[index])
    return "\n".join(block) + "\n"


def _commented(name: str, lines: list[str], start: int) -> TestFailure:
    """A failure told in the ``#`` comments after it, as bats does: ``# (in test file
    test/x.bats, line 9)`` then the failed command."""
    said = []
    for index in range(start, min(len(lines), start + MAX_BLOCK_LINES)):
        if not lines[index].startswith("#") or _SUBTEST.match(lines[index]):
            break
        said.append(lines[index][1:].removeprefix(" "))
    where = _IN_FILE.match(said[0]) if said else None
    if where:
        said = said[1:]
    message = first_lines(textwrap.dedent("\n".join(said)).strip(), MESSAGE_CHARS)
    file, line = (where.group(1), int(where.group(2))) if where else (None, None)
    return TestFailure(name=name, message=message, file=file, line=line)


def _failure(name: str, block: str) -> TestFailure:
    location, error = _LOCATION.search(block), _ERROR.search(block)
    message = ""
    if error:
        message = textwrap.dedent(error.group(2) or "").strip() or (error.group(3) or "")
        message = message.strip().strip("'\"")
    if "failureType: 'subtestsFailed'" in block:
        message = "subtests failed"
    file, line = (location.group(1), int(location.group(2))) if location else (None, None)
    return TestFailure(name=name, message=first_lines(message, MESSAGE_CHARS), file=file, line=line)


def _spec(text: str) -> list[TestFailure]:
    recap = text.rfind("✖ failing tests:")
    if recap < 0:
        return []
    failures = []
    for match in _SPEC.finditer(text, recap):
        body = []
        for line in match.group(4).split("\n"):
            if line.strip().startswith("at "):
                break  # the stack, then the error's properties
            body.append(line)
        message = first_lines(textwrap.dedent("\n".join(body)).strip(), MESSAGE_CHARS)
        failures.append(
            TestFailure(
                name=match.group(3), message=message, file=match.group(1), line=int(match.group(2))
            )
        )
    return failures


def _parents(name: str) -> list[str]:
    parts = name.split(" > ")
    return [" > ".join(parts[:depth]) for depth in range(1, len(parts))]


def _only_failed_below(failure: TestFailure, parents: set[str]) -> bool:
    below = failure.name in parents
    return below and (failure.message == "subtests failed" or not failure.message)


TAP = Format(
    name="tap",
    hints=("node --test", "tap", "tape", "prove", "bats"),
    recognises=recognises,
    parse=parse,
    passes=passes,
)
