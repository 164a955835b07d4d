"""unittest's output (``python -m unittest``, Django's and others' runners built on it):
a block per failing test, ``FAIL: test_x (module.Class.test_x)`` between rules, its
traceback, then the assertion. Run with ``-v``, each test's line ends ``... ok`` when it
passed (after its docstring's first line, when it has one)."""

from __future__ import annotations

import re

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines, merge

__all__ = ["UNITTEST"]

_HEAD = re.compile(
    r"^={50,}\n(?:FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([^)\s]+)\)(.*)\n"
    r"(?:(?!-{50,}\n).*\n)?-{50,}\n",  # a line between: the test's docstring
    re.M,
)
_END = re.compile(r"^(?:={50,}|-{50,}\nRan \d+ tests?)", re.M)
_OK = re.compile(r"^(\w+) \(([^)\s]+)\)(?:\n[^\n]*?)? \.\.\. (?:ok|expected failure)$", re.M)
_FRAME = re.compile(r'^[ \t]*File "(.+)", line (\d+)', re.M)
MESSAGE_CHARS = 800


def recognises(text: str) -> bool:
    """A failing test's block head, or the closing ``Ran N tests`` line."""
    return bool(_HEAD.search(text) or re.search(r"^Ran \d+ tests? in [\d.]+s$", text, re.M))


def parse(text: str) -> list[TestFailure]:
    """Each block's test, the assertion after its traceback and the last frame."""
    failures = []
    for head in _HEAD.finditer(text):
        end = _END.search(text, head.end())
        body = text[head.end() : end.start() if end else len(text)]
        frames = _FRAME.findall(body)
        file, line = (frames[-1][0], int(frames[-1][1])) if frames else (None, None)
        failures.append(
            TestFailure(
                name=_name(head.group(1), head.group(2)) + head.group(3),
                message=first_lines(_without_traceback(body), MESSAGE_CHARS),
                file=file,
                line=line,
            )
        )
    return merge(failures)


def passes(text: str) -> list[str]:
    """The tests ``-v`` says passed, named as failures are (``module.Class.method``)."""
    return list(dict.fromkeys(_name(m.group(1), m.group(2)) for m in _OK.finditer(text)))


def _name(method: str, where: str) -> str:
    """``module.Class.method``: Python 3.11 prints it whole, older ones ``(module.Class)``."""
    return where if where.endswith(f".{method}") else f"{where}.{method}"


def _without_traceback(body: str) -> str:
    kept, in_traceback = [], False
    for line in body.strip("\n").split("\n"):
        if line.startswith("Traceback (most recent call last):"):
            in_traceback = True
        elif in_traceback and (line.startswith(" ") or not line):
            continue
        else:
            in_traceback = False
            kept.append(line)
    return "\n".join(kept)


UNITTEST = Format(
    name="unittest",
    hints=("unittest", "manage.py test", "setup.py test"),
    recognises=recognises,
    parse=parse,
    passes=passes,
)
