"""Fixtures of the agent tests: provider wire servers on loopback, with their keys set."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from golem.testing.models import (
    ANTHROPIC_KEY_ENV,
    OPENAI_KEY_ENV,
    TEST_KEY,
    AnthropicServer,
    OpenAIServer,
)


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    """A Messages API server that requires ``TEST_KEY``, which ``ANTHROPIC_KEY_ENV``
    holds."""
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with AnthropicServer(api_key=TEST_KEY) as server:
        yield server


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """A Chat Completions server that requires ``TEST_KEY``, which ``OPENAI_KEY_ENV``
    holds."""
    monkeypatch.setenv(OPENAI_KEY_ENV, TEST_KEY)
    with OpenAIServer(api_key=TEST_KEY) as server:
        yield server
