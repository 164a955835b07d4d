"""The server's log lines of golem's own: each one line of plain text, whatever a value in
it held (a forge's error, an issue's title), written by the formatter `golem serve`
configures (tests/service/test_trigger_sources.py reads them from a real server)."""

from __future__ import annotations

import logging
import sys

import pytest

from golem.service import server_log_config
from golem.service.logs import CleanFormatter

HOSTILE = [
    "\x1b]0;owned\x07title",  # retitles the window
    "\x1b]8;;http://evil.test\x1b\\click\x1b]8;;\x1b\\",  # a hyperlink
    "\x1b[2J\x1b[Hcleared",  # clears the screen
    "\x9b31mred",  # CSI as one C1 character
    "abc\u202edcba",  # reads backwards
    "ok\nINFO:     golem.service.queue: run forged",  # a line of its own
]


def formatter() -> CleanFormatter:
    spec = server_log_config()["formatters"]["golem"]
    return CleanFormatter(fmt=spec["fmt"], use_colors=False)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_value_in_a_line_of_golems_comes_out_as_one_line_of_text(value: str) -> None:
    record = logging.LogRecord(
        "golem.service.queue", logging.INFO, __file__, 1, "run %s: %s", ("r-1", value), None
    )
    line = formatter().format(record)
    assert line.startswith("INFO:")
    assert "golem.service.queue: run r-1: " in line
    assert "\n" not in line
    assert not any(c in line for c in "\x1b\x9b\x07\u202e")


def forge_failing() -> None:
    raise RuntimeError("the forge said \x1b]0;owned\x07 and \x1b[31mred")


def test_a_traceback_in_a_line_of_golems_comes_out_as_text() -> None:
    try:
        forge_failing()
    except RuntimeError:
        record = logging.LogRecord(
            "golem.service.queue", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    shown = formatter().format(record)
    assert "RuntimeError: the forge said  and red" in shown
    assert "\x1b" not in shown
    assert "\x07" not in shown
