"""golem.agent.external: CLI coding agents (Claude Code, Codex, pi, aider, goose, or any
other) run in their one-shot mode inside a box, with the same ``run`` as golem's Agent::

    agent = ExternalAgent("claude", model="claude-sonnet-4-5", budget=Budget(turns=30))
    outcome = await agent.run(box, "Fix the failing test", trajectory=Path("run.jsonl"))

The box must be ``filtered`` and broker the CLI's provider key (``[[credentials]]``): the
CLI holds only a sentinel and golem's route; the egress proxy adds the real key. A step's
toolshed tools reach claude, codex and goose as one MCP server (``run(..., mcp_url=...)``).
"""

from golem.agent.external.builtins import ANTHROPIC, BUILTINS, OPENAI
from golem.agent.external.parsers import PARSERS
from golem.agent.external.plan import check_mcp
from golem.agent.external.runner import ExternalAgent
from golem.agent.external.template import (
    ExternalTemplate,
    OutputFormat,
    ProviderCredential,
)

__all__ = [
    "ANTHROPIC",
    "BUILTINS",
    "OPENAI",
    "PARSERS",
    "ExternalAgent",
    "ExternalTemplate",
    "OutputFormat",
    "ProviderCredential",
    "check_mcp",
]
