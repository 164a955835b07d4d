"""Which toolshed tools a step gets: patterns ``server.tool`` (the tool part may be a
glob: ``tracker.search_*``, ``memory.*``), and the names the model sees."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from golem.core.errors import ConfigError
from golem.core.toolshed_config import SERVER_NAME, ToolshedConfig

__all__ = ["ToolPattern", "check_patterns", "parse_patterns", "wire_name"]

WIRE_NAME_LIMIT = 64
"""Model providers take tool names of at most 64 of [A-Za-z0-9_-] (no dot)."""
_NOT_WIRE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class ToolPattern:
    """``server.tool_glob``: the server by its exact name, its tools by a glob."""

    server: str
    tools: str

    @classmethod
    def parse(cls, text: str) -> ToolPattern:
        """Parse ``server.tool_glob``; ValueError saying what is wrong."""
        server, dot, tools = text.partition(".")
        if not dot or not tools:
            raise ValueError(
                f"toolshed pattern {text!r}: write <server>.<tool>, e.g. tracker.search or "
                "tracker.* (the tool part may be a glob)"
            )
        if not SERVER_NAME.fullmatch(server):
            raise ValueError(
                f"toolshed pattern {text!r}: {server!r} is not a server name (the server "
                "part is exact, no glob)"
            )
        return cls(server, tools)

    def matches(self, server: str, tool: str) -> bool:
        """Whether ``server.tool`` is chosen by this pattern."""
        return server == self.server and fnmatchcase(tool, self.tools)

    def __str__(self) -> str:
        return f"{self.server}.{self.tools}"


def parse_patterns(texts: Iterable[str]) -> list[ToolPattern]:
    """Each pattern parsed; ValueError for the first malformed one."""
    return [ToolPattern.parse(text) for text in texts]


def check_patterns(patterns: Sequence[ToolPattern], config: ToolshedConfig, where: str) -> None:
    """ConfigError when a pattern names a server ``config`` does not have."""
    for pattern in patterns:
        if config.server(pattern.server) is None:
            known = ", ".join(server.name for server in config.servers) or "none configured"
            raise ConfigError(
                f"{where}: toolshed pattern {str(pattern)!r} names the server "
                f"{pattern.server!r}, which [[toolshed.servers]] does not have (servers: {known})"
            )


def wire_name(server: str, tool: str) -> str:
    """The name the model sees for ``server.tool``: ``server__tool`` with what providers
    refuse replaced by ``_``; past 64 characters, cut and made unique by a hash."""
    name = f"{server}__{_NOT_WIRE.sub('_', tool)}"
    if len(name) <= WIRE_NAME_LIMIT and name == f"{server}__{tool}":
        return name
    digest = hashlib.sha256(f"{server}.{tool}".encode()).hexdigest()[:8]
    return f"{name[: WIRE_NAME_LIMIT - 9]}_{digest}"
