"""The server's log: uvicorn's, with golem's own loggers on its standard error beside it.

golem's modules log what an operator needs to follow (a run's tier and the rule that gave
it, a trigger's answer, a worker letting a run go); without a handler of their own only
their warnings reached the output, through logging's last resort. Their lines carry text
from outside (an issue's identifier, a forge's error, a repository), so each is made one
line of plain text before it is written: no escape sequence or control character reaches
the operator's terminal, and no newline in a value can forge a line of its own.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import DefaultFormatter

from golem.core.ansi import clean

__all__ = ["CleanFormatter", "server_log_config"]


class CleanFormatter(DefaultFormatter):
    """uvicorn's formatter (its level prefix, its colours on a terminal) over a message
    made one line of plain text, and a traceback made plain."""

    def format(self, record: logging.LogRecord) -> str:
        shown = copy.copy(record)
        shown.msg, shown.args = clean(record.getMessage(), multiline=False), None
        if shown.exc_text:  # another handler's formatting, kept on the record
            shown.exc_text = clean(shown.exc_text)
        if shown.stack_info:
            shown.stack_info = clean(shown.stack_info)
        return super().format(shown)

    def formatException(self, ei: Any) -> str:
        return clean(super().formatException(ei))


def server_log_config(level: str = "info") -> dict[str, Any]:
    """uvicorn's logging configuration with a ``golem`` logger at ``level`` beside it."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["golem"] = {
        "()": f"{__name__}.CleanFormatter",
        "fmt": "%(levelprefix)s %(name)s: %(message)s",
    }
    config["handlers"]["golem"] = {
        "formatter": "golem",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["golem"] = {
        "handlers": ["golem"],
        "level": level.upper(),
        "propagate": False,
    }
    return config
