"""How to run one CLI agent in its one-shot mode: the ExternalTemplate, and how it is
filled in for a run.

Placeholders are replaced inside the one argv item (or env value, file, stdin) they are
written in, in a single pass: a value never splits into more argv items, never passes
through a shell, and a placeholder inside a value (a task that mentions ``{model}``) stays
as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "PLACEHOLDER",
    "ExternalTemplate",
    "OutputFormat",
    "ProviderCredential",
    "fill",
    "placeholder_env_names",
]

OutputFormat = Literal["text", "claude", "codex", "pi", "aider"]
"""How golem reads the CLI's standard output: ``text`` (lines only), or a named parser:
``claude`` (stream-json), ``codex`` (exec --json), ``pi`` (--mode json), ``aider`` (text
with its token and cost lines)."""

PLACEHOLDER = re.compile(
    r"\{(task|prompt|prompt_file|model|run_dir|max_turns|max_usd|mcp_url"
    r"|env:[A-Za-z_][A-Za-z0-9_]*)\}"
)
"""``{task}`` the task as given; ``{prompt}`` the prompt golem composes (context and
task); ``{prompt_file}`` a file in the box holding it; ``{model}``; ``{run_dir}`` a fresh
directory in the box for this run; ``{max_turns}`` and ``{max_usd}`` from the budget;
``{env:NAME}`` the value of NAME in the box's environment (a golem route, say);
``{mcp_url}`` the URL of the step's tools as one streamable-HTTP MCP server (golem's
gateway, reached through the box's proxy: no token needed), in ``mcp_*`` fields only."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ProviderCredential(BaseModel):
    """A model provider's key the CLI reads from the box's environment. In a box it must
    be a golem sentinel, brokered by a ``[[credentials]]`` entry, with its base URL
    pointing at golem's route; the fields below also shape the entry golem suggests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Suggested [[credentials]] name, e.g. anthropic.")
    key_env: str = Field(description="The box variable holding the (sentinel) key.")
    base_url_env: str | None = Field(
        None, description="The box variable holding the base URL (golem's route)."
    )
    host: str = Field(description=r"Host pattern of the real API, e.g. '^api\.anthropic\.com$'.")
    header: str = Field("Authorization", description="Header that carries the key.")
    upstream: str = Field(description="Base URL of the real API.")

    @field_validator("key_env", "base_url_env")
    @classmethod
    def _variable_names(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError(f"{value!r} is not an environment variable name")
        return value

    def env_names(self) -> list[str]:
        """The box variables this credential puts there."""
        return [self.key_env] + ([self.base_url_env] if self.base_url_env else [])

    def toml(self) -> str:
        """The ``[[credentials]]`` entry that brokers this key."""
        lines = [
            "[[credentials]]",
            f'name = "{self.name}"',
            f"host = '{self.host}'",
        ]
        if self.header != "Authorization":
            lines.append(f'header = "{self.header}"')
        lines += [
            f'env = "{self.key_env}"',
            f'from_env = "{self.key_env}"             # read on the host, never in the box',
            f'upstream = "{self.upstream}"',
        ]
        if self.base_url_env:
            lines.append(f'base_url_env = "{self.base_url_env}"')
        return "\n".join(lines)


class ExternalTemplate(BaseModel):
    """A CLI agent golem can run in a box in one-shot mode, permissions auto-approved
    (the box is the security boundary). The argv is a list, never a shell string."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Short name, e.g. claude; shown in events.")
    argv: list[str] = Field(min_length=1, description="The command; argv[0] is the CLI.")
    model_args: list[str] = Field(
        default_factory=list, description="Appended when a model is given: ['--model', '{model}']."
    )
    turns_args: list[str] = Field(
        default_factory=list,
        description="Appended when the budget limits turns: ['--max-turns', '{max_turns}'].",
    )
    usd_args: list[str] = Field(
        default_factory=list,
        description="Appended when the budget limits dollars: ['--max-budget-usd', '{max_usd}'].",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Set for the call (telemetry and update switches, config locations).",
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="Files written before the call, by path relative to {run_dir}.",
    )
    mcp_args: list[str] = Field(
        default_factory=list,
        description="Appended when the step gives the CLI tools (toolshed): how it takes "
        "the MCP server at '{mcp_url}', e.g. ['--mcp-config', '{run_dir}/mcp.json'].",
    )
    mcp_env: dict[str, str] = Field(
        default_factory=dict, description="Set for the call when the step gives it tools."
    )
    mcp_files: dict[str, str] = Field(
        default_factory=dict,
        description="Written before the call when the step gives it tools, by path "
        "relative to {run_dir}: the CLI's MCP configuration naming '{mcp_url}'.",
    )
    stdin: str | None = Field(None, description="Fed to standard input, e.g. '{prompt}'.")
    credentials: list[ProviderCredential] = Field(
        default_factory=list, description="Provider keys the CLI needs, brokered by golem."
    )
    output: OutputFormat = "text"
    provider: str | None = Field(
        None,
        description="Price-table provider (anthropic, openai): the cost of usage the CLI "
        "reports without a cost.",
    )
    drop_stdout: str | None = Field(
        None,
        description="grep -E pattern of stdout lines dropped inside the box, so that chatty "
        "progress lines do not fill the box's output cap (needs sh and grep in the image).",
    )
    image_recipe: str = Field(
        "", description="An [[images]] entry that installs the CLI, for the error when missing."
    )

    @field_validator("argv")
    @classmethod
    def _program_is_plain(cls, value: list[str]) -> list[str]:
        if value and PLACEHOLDER.search(value[0]):
            raise ValueError(
                f"argv[0] {value[0]!r} names the CLI, which golem looks up before the run: "
                "it may not hold placeholders (run an interpreter on '{run_dir}/script')"
            )
        return value

    @field_validator("env", "mcp_env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return value

    @field_validator("files", "mcp_files")
    @classmethod
    def _relative_paths(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value:
            if path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"file {path!r} must be a path inside {{run_dir}}")
        return value

    @property
    def program(self) -> str:
        """The CLI's name or path (argv[0])."""
        return self.argv[0]

    @property
    def speaks_mcp(self) -> bool:
        """Whether golem can hand this CLI a step's tools (an MCP server by URL)."""
        return bool(self.mcp_args or self.mcp_env or self.mcp_files)

    def env_names_needed(self) -> list[str]:
        """Box variables the CLI needs: its credentials and any ``{env:NAME}`` used."""
        names = [name for cred in self.credentials for name in cred.env_names()]
        texts = [*self.argv, *self.model_args, *self.env.values(), *self.files.values()]
        texts += [*self.mcp_args, *self.mcp_env.values(), *self.mcp_files.values()]
        for name in placeholder_env_names([*texts, self.stdin or ""]):
            if name not in names:
                names.append(name)
        return names


def placeholder_env_names(texts: list[str]) -> list[str]:
    """The NAMEs of the ``{env:NAME}`` placeholders in ``texts``, in order, once each."""
    names: list[str] = []
    for text in texts:
        for match in PLACEHOLDER.finditer(text):
            key = match.group(1)
            if key.startswith("env:") and key[4:] not in names:
                names.append(key[4:])
    return names


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each placeholder replaced by its value, in one pass."""

    def value_of(match: re.Match[str]) -> str:
        return values[match.group(1)]

    return PLACEHOLDER.sub(value_of, text)
