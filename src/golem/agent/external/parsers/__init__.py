"""Readers of external CLIs' standard output, chosen by a template's ``output``."""

from __future__ import annotations

from golem.agent.external.parsers.aider import AiderParser
from golem.agent.external.parsers.base import Final, OutputParser
from golem.agent.external.parsers.claude import ClaudeParser
from golem.agent.external.parsers.codex import CodexParser
from golem.agent.external.parsers.pi import PiParser

__all__ = ["PARSERS", "Final", "OutputParser", "make_parser"]

PARSERS: dict[str, type[OutputParser]] = {
    "text": OutputParser,
    "claude": ClaudeParser,
    "codex": CodexParser,
    "pi": PiParser,
    "aider": AiderParser,
}
"""Output format name -> reader."""


def make_parser(output: str) -> OutputParser:
    """A fresh reader for one run."""
    return PARSERS[output]()
