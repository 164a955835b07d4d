"""doctest's own output (``python -m doctest``, ``doctest.testmod()``): between rules of
``*``, ``File "x.py", line 6, in module.func`` then the failed example, what was expected
and what came."""

from __future__ import annotations

import re

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines, merge

__all__ = ["DOCTEST"]

_RULE = "*" * 70
_WHERE = re.compile(r'^File "(.+)", line (\d+), in (\S+)$')
MESSAGE_CHARS = 800


def recognises(text: str) -> bool:
    """A rule of ``*`` and an example that failed."""
    return f"\n{_RULE}\n" in f"\n{text}" and (
        "\nFailed example:\n" in text or "\nException raised:\n" in text
    )


def parse(text: str) -> list[TestFailure]:
    """Each failed example, named by the function or module whose docstring holds it."""
    failures = []
    for chunk in text.split(f"{_RULE}\n"):
        lines = chunk.split("\n")
        if where := _WHERE.match(lines[0]):
            message = first_lines("\n".join(lines[1:]), MESSAGE_CHARS)
            failures.append(
                TestFailure(
                    name=where.group(3),
                    message=message,
                    file=where.group(1),
                    line=int(where.group(2)),
                )
            )
    return merge(failures)


DOCTEST = Format(name="doctest", hints=("doctest",), recognises=recognises, parse=parse)
