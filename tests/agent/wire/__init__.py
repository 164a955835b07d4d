"""Loopback servers that speak the providers' real wire protocols, for tests that drive
the official SDKs (model providers, the agent loop, end-to-end runs).

``tests/agent/conftest.py`` has fixtures that start them (``anthropic_server``,
``openai_server``, with their key variables set); ``models_config`` points golem's
``[models]`` at them::

    async def test_agent_reads_a_file(anthropic_server):
        anthropic_server.push(stream_reply(ToolUse("read", {"path": "a.py"})))
        anthropic_server.push(stream_reply(Text("done")))
        model = make_model(
            "anthropic/claude-haiku-4-5", models_config(anthropic=anthropic_server)
        )
        ...
        assert anthropic_server.requests[1].json["messages"][-1]["role"] == "user"
"""

from __future__ import annotations

from typing import Any

from golem.core.model_config import (
    AnthropicConfig,
    ModelsConfig,
    OpenAICompatibleConfig,
    OpenAIConfig,
)
from tests.agent.wire.anthropic_server import AnthropicServer
from tests.agent.wire.openai_server import OpenAIServer
from tests.agent.wire.server import FAST_RETRY, RecordedRequest, Reply, WireServer, sse

__all__ = [
    "ANTHROPIC_KEY_ENV",
    "FAST_RETRY",
    "OPENAI_KEY_ENV",
    "TEST_KEY",
    "AnthropicServer",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "WireServer",
    "models_config",
    "sse",
]

TEST_KEY = "sk-golem-wire-test"
"""The API key the fixtures' servers require, and that their variables hold."""
ANTHROPIC_KEY_ENV = "GOLEM_TEST_ANTHROPIC_KEY"
OPENAI_KEY_ENV = "GOLEM_TEST_OPENAI_KEY"


def models_config(
    *,
    anthropic: AnthropicServer | None = None,
    openai: OpenAIServer | None = None,
    max_retries: int = 2,
) -> ModelsConfig:
    """``[models]`` with anthropic/ and openai/ (and openai-compatible/) pointed at these
    servers, keys read from ``ANTHROPIC_KEY_ENV`` and ``OPENAI_KEY_ENV``, and few
    retries so that tests of failures stay fast."""

    def settings(server: AnthropicServer | OpenAIServer | None, key_env: str) -> dict[str, Any]:
        base_url = server.base_url if server is not None else None
        return {
            "api_key_env": key_env,
            "base_url": base_url,
            "max_retries": max_retries,
            "timeout": 30,
        }

    return ModelsConfig(
        anthropic=AnthropicConfig(**settings(anthropic, ANTHROPIC_KEY_ENV)),
        openai=OpenAIConfig(**settings(openai, OPENAI_KEY_ENV)),
        openai_compatible=OpenAICompatibleConfig(**settings(openai, OPENAI_KEY_ENV)),
    )
