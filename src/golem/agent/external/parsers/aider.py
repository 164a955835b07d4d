"""aider's plain output, and the one line of it golem reads: after each model call aider
prints ``Tokens: 2.3k sent, 21 received. Cost: $0.0073 message, $0.0073 session.``"""

from __future__ import annotations

import re

from golem.agent.events import AgentEvent
from golem.agent.external.parsers.base import OutputParser
from golem.agent.messages import Usage

__all__ = ["AiderParser"]

_TOKENS = re.compile(r"^Tokens: (?P<body>.*?)(?:\. Cost: (?P<cost>.*))?$")
_COUNT = re.compile(r"(?P<n>[\d.]+)(?P<k>[km]?) (?P<what>sent|received|cache write|cache hit)")
_SESSION_COST = re.compile(r"\$(?P<usd>[\d.]+) session")
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


def _tokens(body: str) -> Usage:
    """The counts of one Tokens line (aider rounds them: 2.3k)."""
    counts = {"sent": 0, "received": 0, "cache write": 0, "cache hit": 0}
    for match in _COUNT.finditer(body):
        counts[match["what"]] = round(float(match["n"]) * _SCALE[match["k"]])
    return Usage(
        input_tokens=counts["sent"],
        output_tokens=counts["received"],
        cache_read_tokens=counts["cache hit"],
        cache_write_tokens=counts["cache write"],
    )


class AiderParser(OutputParser):
    """Text, with turns, usage and cost from aider's Tokens lines."""

    def on_text(self, line: str) -> list[AgentEvent]:
        match = _TOKENS.match(line.strip())
        if match is None:
            return super().on_text(line)
        self.turns += 1
        self.usage = self.usage + _tokens(match["body"])
        cost = _SESSION_COST.search(match["cost"] or "")
        if cost is not None:
            self.cost_usd = float(cost["usd"])
        return []
