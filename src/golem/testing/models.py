"""golem's ``[models]`` pointed at the loopback provider servers
(``anthropic_server.AnthropicServer``, ``openai_server.OpenAIServer``), so a test drives the
official SDKs, the agent loop or a whole run against them::

    with AnthropicServer(api_key=TEST_KEY) as anthropic:
        anthropic.push(stream_reply(ToolUse("read", {"path": "a.py"})))
        anthropic.push(stream_reply(Text("done")))
        model = make_model("anthropic/claude-haiku-4-5", models_config(anthropic=anthropic))
        ...
        assert anthropic.requests[1].json["messages"][-1]["role"] == "user"

The keys are read from ``ANTHROPIC_KEY_ENV`` and ``OPENAI_KEY_ENV``; golem's own suite sets
them in fixtures (tests/agent/conftest.py).
"""

from __future__ import annotations

from typing import Any

from golem.core.model_config import (
    AnthropicConfig,
    ModelsConfig,
    OpenAICompatibleConfig,
    OpenAIConfig,
)
from golem.testing.anthropic_server import AnthropicServer
from golem.testing.openai_server import OpenAIServer
from golem.testing.wire import FAST_RETRY, RecordedRequest, Reply, WireServer, sse

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
