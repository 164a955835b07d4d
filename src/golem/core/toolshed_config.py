"""Configuration of the toolshed: the MCP servers whose tools agent steps may be given
(``[[toolshed.servers]]``)."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ByteSize, ConfigDict, Field, field_validator, model_validator

__all__ = ["McpServer", "ToolshedConfig"]

SERVER_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?")
"""A server's name: it prefixes its tools' names (``name.tool``), so no dot and no ``_``."""


class McpServer(BaseModel):
    """One MCP server. ``command``: a stdio server, started inside the run's box (what it
    executes is contained like the agent's own commands; its program must be in the box's
    image or fetched over the box's network). ``url``: a streamable-HTTP server, called from
    the host, only if the run's egress policy allows its host; ``credential`` names a
    ``[[credentials]]`` entry whose value is sent to it (and nowhere else), never seen by the
    box or the model."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Identifier; its tools are named <name>.<tool>.")
    command: list[str] | None = Field(
        None, min_length=1, description="stdio: the server's argv, run in the run's box."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="stdio: environment added to the box's."
    )
    cwd: str | None = Field(None, description="stdio: working directory; default /workspace.")
    url: str | None = Field(None, description="Streamable HTTP: the server's endpoint URL.")
    credential: str | None = Field(
        None,
        description="HTTP: a [[credentials]] name; its value goes in its header (after "
        "`scheme` for Authorization) to this server only; its host must match the url's.",
    )
    scheme: str | None = Field(
        "Bearer", description="HTTP: the Authorization scheme before the value; None: raw."
    )
    connect_timeout: float = Field(
        30.0, gt=0, le=600, description="Seconds to start (or reach) the server and list tools."
    )
    call_timeout: float = Field(120.0, gt=0, le=3600, description="Seconds one tool call may take.")
    max_result_bytes: ByteSize = Field(
        ByteSize(64 * 1024),
        ge=1024,
        le=16 * 1024**2,
        description="Longest tool result the model reads; past it, clipped (with a note).",
    )

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not SERVER_NAME.fullmatch(value):
            raise ValueError(
                f"toolshed server name {value!r}: use 1-32 lower-case letters, digits and "
                "inner dashes (it prefixes its tools' names)"
            )
        return value

    @field_validator("url")
    @classmethod
    def _url_is_http(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"toolshed server url {value!r}: use an http(s)://host/... URL")
        if parts.username or parts.password:
            raise ValueError(
                f"toolshed server url {value!r}: no credentials in the URL; name a "
                "[[credentials]] entry in `credential`"
            )
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"toolshed server {self.name!r}: set exactly one of `command` (stdio, in the "
                "box) and `url` (streamable HTTP)"
            )
        if self.command is None and (self.env or self.cwd):
            raise ValueError(f"toolshed server {self.name!r}: env and cwd are for stdio servers")
        if self.url is None and self.credential is not None:
            raise ValueError(
                f"toolshed server {self.name!r}: a stdio server gets no credential; "
                "brokered credentials are for HTTP servers"
            )
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """How golem talks to it."""
        return "stdio" if self.command is not None else "http"


class ToolshedConfig(BaseModel):
    """The MCP servers agent steps may draw tools from; each step names its subset."""

    model_config = ConfigDict(extra="forbid")

    servers: list[McpServer] = Field(
        default_factory=list, description="MCP servers ([[toolshed.servers]])."
    )

    @field_validator("servers")
    @classmethod
    def _unique_names(cls, servers: list[McpServer]) -> list[McpServer]:
        names = [server.name for server in servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"toolshed server names must be unique: {', '.join(duplicates)}")
        return servers

    def server(self, name: str) -> McpServer | None:
        """The server called ``name``, if configured."""
        return next((server for server in self.servers if server.name == name), None)
