"""The CLI agents golem knows by name: claude, codex, pi, aider and goose.

Each runs its one-shot mode with permissions auto-approved (the box is the security
boundary), reads the prompt from standard input or a file (no argv length limit, no task
mistaken for an option), reaches its model only through golem's credential route, and has
its telemetry, update checks and error reporting switched off. claude, codex and goose get
a step's toolshed tools as one streamable-HTTP MCP server named ``golem`` (pi and aider
have no MCP client). The flags are those of the versions named in docs/external-agents.md.
"""

from __future__ import annotations

from golem.agent.external.template import ExternalTemplate, ProviderCredential

__all__ = ["ANTHROPIC", "BUILTINS", "OPENAI"]

ANTHROPIC = ProviderCredential(
    name="anthropic",
    key_env="ANTHROPIC_API_KEY",
    base_url_env="ANTHROPIC_BASE_URL",
    host=r"^api\.anthropic\.com$",
    header="x-api-key",
    upstream="https://api.anthropic.com",
)
"""Anthropic's key, sent as x-api-key; clients append /v1/messages to the base URL."""

OPENAI = ProviderCredential(
    name="openai",
    key_env="OPENAI_API_KEY",
    base_url_env="OPENAI_BASE_URL",
    host=r"^api\.openai\.com$",
    upstream="https://api.openai.com/v1",
)
"""OpenAI's key, sent as a bearer token; clients append /responses and the like."""

CLAUDE = ExternalTemplate(
    name="claude",
    argv=[
        "claude",
        "--print",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        "--no-session-persistence",
    ],
    model_args=["--model", "{model}"],
    turns_args=["--max-turns", "{max_turns}"],
    usd_args=["--max-budget-usd", "{max_usd}"],
    mcp_args=["--mcp-config", "{run_dir}/mcp.json", "--strict-mcp-config"],  # ends the list
    mcp_files={"mcp.json": '{"mcpServers": {"golem": {"type": "http", "url": "{mcp_url}"}}}'},
    stdin="{prompt}",
    env={
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
    },
    credentials=[ANTHROPIC],
    output="claude",
    provider="anthropic",
    image_recipe='install = ["npm:@anthropic-ai/claude-code"]',
)

_CODEX_PROVIDER = "model_providers.golem"
CODEX = ExternalTemplate(
    name="codex",
    argv=[
        "codex",
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--skip-git-repo-check",
        "--ephemeral",
        "--color",
        "never",
        "--disable",
        "plugins",
        "--disable",
        "remote_plugin",
        "-c",
        'model_provider="golem"',
        "-c",
        f'{_CODEX_PROVIDER}.name="golem"',
        "-c",
        f'{_CODEX_PROVIDER}.base_url="{{env:OPENAI_BASE_URL}}"',
        "-c",
        f'{_CODEX_PROVIDER}.env_key="OPENAI_API_KEY"',
        "-c",
        f'{_CODEX_PROVIDER}.wire_api="responses"',
        "-c",
        f"{_CODEX_PROVIDER}.supports_websockets=false",
        "-c",
        "analytics.enabled=false",
        "-c",
        "feedback.enabled=false",
        "-c",
        "check_for_update_on_startup=false",
    ],
    model_args=["--model", "{model}"],
    mcp_args=["-c", 'mcp_servers.golem.url="{mcp_url}"'],
    stdin="{prompt}",
    credentials=[OPENAI],
    output="codex",
    provider="openai",
    image_recipe='install = ["npm:@openai/codex"]',
)

PI = ExternalTemplate(
    name="pi",
    argv=[
        "pi",
        "--print",
        "--mode",
        "json",
        "--no-session",
        "--offline",
        "--provider",
        "anthropic",
    ],
    model_args=["--model", "{model}"],
    stdin="{prompt}",
    env={"PI_CODING_AGENT_DIR": "{run_dir}/pi", "PI_OFFLINE": "1", "PI_TELEMETRY": "0"},
    files={
        "pi/models.json": '{"providers": {"anthropic": {"baseUrl": "{env:ANTHROPIC_BASE_URL}"}}}',
    },
    credentials=[ANTHROPIC],
    output="pi",
    provider="anthropic",
    drop_stdout=r'^\{"type":"message_update"',
    image_recipe=(
        "# pi needs node >= 20.6; npm:node@22 installs it from the npm registry\n"
        'install = ["npm:node@22", "npm:@mariozechner/pi-coding-agent"]'
    ),
)

AIDER = ExternalTemplate(
    name="aider",
    argv=[
        "aider",
        "--message-file",
        "{prompt_file}",
        "--yes-always",
        "--no-git",
        "--no-auto-commits",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-release-notes",
        "--no-pretty",
        "--no-fancy-input",
        "--no-detect-urls",
        "--chat-history-file",
        "{run_dir}/aider.chat.history.md",
        "--input-history-file",
        "{run_dir}/aider.input.history",
    ],
    model_args=["--model", "{model}"],
    env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    credentials=[ANTHROPIC],
    output="aider",
    provider="anthropic",
    image_recipe='install = ["pip:aider-chat"]',
)

GOOSE = ExternalTemplate(
    name="goose",
    argv=[
        "goose",
        "run",
        "--no-session",
        "--with-builtin",
        "developer",
        "--provider",
        "anthropic",
        "--instructions",
        "{prompt_file}",
    ],
    model_args=["--model", "{model}"],
    turns_args=["--max-turns", "{max_turns}"],
    mcp_args=["--with-streamable-http-extension", "{mcp_url}"],
    env={
        "GOOSE_MODE": "auto",
        "ANTHROPIC_HOST": "{env:ANTHROPIC_BASE_URL}",
        "GOOSE_TELEMETRY_ENABLED": "false",
        "GOOSE_DISABLE_KEYRING": "1",
    },
    credentials=[ANTHROPIC],
    output="text",
    provider="anthropic",
    image_recipe=(
        "# goose is published as release binaries, in no registry golem installs from:\n"
        'setup = "<download the goose CLI binary to /usr/local/bin/goose>"'
    ),
)

BUILTINS: dict[str, ExternalTemplate] = {t.name: t for t in (CLAUDE, CODEX, PI, AIDER, GOOSE)}
"""The built-in CLI agents by name."""
