"""Tools by name, and the named subsets an agent step may be given."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from golem.agent.contracts import Tool
from golem.agent.tools.bash import BashTool
from golem.agent.tools.edit import EditTool
from golem.agent.tools.finish import FinishTool
from golem.agent.tools.ls import LsTool
from golem.agent.tools.read import ReadTool
from golem.agent.tools.search import GlobTool, GrepTool
from golem.agent.tools.write import WriteTool
from golem.core import ConfigError

__all__ = ["TOOLS", "TOOLSETS", "make_tools"]

TOOLS: Mapping[str, Callable[[], Tool]] = MappingProxyType(
    {
        "read": ReadTool,
        "write": WriteTool,
        "edit": EditTool,
        "bash": BashTool,
        "grep": GrepTool,
        "glob": GlobTool,
        "ls": LsTool,
        "finish": FinishTool,
    }
)
"""Every tool by its name, with its default settings."""

TOOLSETS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "all": tuple(TOOLS),
        "readonly": ("read", "grep", "glob", "ls", "finish"),
        "files": ("read", "write", "edit", "grep", "glob", "ls", "finish"),
    }
)
"""Named subsets: ``all``; ``readonly`` (look, never change); ``files`` (change files but
run no commands). No toolset shares a name with a tool."""


def make_tools(names: str | Sequence[str]) -> list[Tool]:
    """Fresh tools for tool names and toolset names, in order, each tool once.

    Raises ``ConfigError`` naming the valid names when one is unknown."""
    if isinstance(names, str):
        names = [names]
    chosen: list[str] = []
    for name in names:
        expanded = TOOLSETS.get(name) or ((name,) if name in TOOLS else None)
        if expanded is None:
            raise ConfigError(
                f"unknown tool or toolset {name!r}; tools: {', '.join(TOOLS)}; "
                f"toolsets: {', '.join(TOOLSETS)}"
            )
        chosen += [tool for tool in expanded if tool not in chosen]
    return [TOOLS[name]() for name in chosen]
