"""Model providers are reached over verified TLS, through the one TLS context a process
builds for every call (golem.agent.models.tls): a server whose certificate no trusted CA
signed (a man in the middle) gets no request, so never the key; a CA the environment trusts
(``SSL_CERT_FILE``, read when the context is built) is honoured, call after call."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.agent import Message, ModelRequest
from golem.agent.models import make_model
from golem.core.errors import ModelUnavailable
from golem.sandbox.egress import EgressCA
from golem.testing.anthropic_server import Text, stream_reply
from golem.testing.models import (
    ANTHROPIC_KEY_ENV,
    OPENAI_KEY_ENV,
    TEST_KEY,
    AnthropicServer,
    OpenAIServer,
    models_config,
)
from golem.testing.openai_server import stream_reply as openai_reply

ASK = ModelRequest(system="You fix bugs.", messages=[Message(role="user", content="Fix it.")])

CALLS_IN_A_FRESH_PROCESS = """
import asyncio, sys
from golem.agent import Message, ModelRequest
from golem.agent.models import make_model
from golem.core.model_config import AnthropicConfig, ModelsConfig

config = ModelsConfig(
    anthropic=AnthropicConfig(api_key_env="TLS_TEST_KEY", base_url=sys.argv[1], max_retries=0)
)
model = make_model("anthropic/claude-haiku-4-5", config)
ask = ModelRequest(system="s", messages=[Message(role="user", content="hi")])

async def twice() -> None:
    for _ in range(2):
        print((await model.complete(ask)).message.content)

asyncio.run(twice())
"""


@pytest.fixture(scope="module")
def impostor_ca() -> Iterator[EgressCA]:
    """A CA nobody's trust store holds."""
    ca = EgressCA()
    yield ca
    ca.close()


async def test_an_anthropic_server_with_an_untrusted_certificate_gets_no_request(
    impostor_ca: EgressCA, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with AnthropicServer(tls=impostor_ca.server_context("127.0.0.1")) as server:
        server.otherwise(stream_reply(Text("I read your key.")))
        model = make_model(
            "anthropic/claude-haiku-4-5", models_config(anthropic=server, max_retries=0)
        )

        with pytest.raises(ModelUnavailable):
            await model.complete(ASK)

        assert server.url.startswith("https://")
        assert server.requests == []


async def test_an_openai_server_with_an_untrusted_certificate_gets_no_request(
    impostor_ca: EgressCA, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OPENAI_KEY_ENV, TEST_KEY)
    with OpenAIServer(tls=impostor_ca.server_context("127.0.0.1")) as server:
        server.otherwise(openai_reply(text="I read your key."))
        model = make_model("openai/gpt-5", models_config(openai=server, max_retries=0))

        with pytest.raises(ModelUnavailable):
            await model.complete(ASK)

        assert server.requests == []


def test_a_ca_the_environment_trusts_is_honoured_for_every_call(
    impostor_ca: EgressCA, tmp_path: Path
) -> None:
    bundle = tmp_path / "trusted.pem"
    bundle.write_bytes(impostor_ca.pem)
    with AnthropicServer(api_key=TEST_KEY, tls=impostor_ca.server_context("127.0.0.1")) as server:
        server.otherwise(stream_reply(Text("verified")))
        env = {**os.environ, "SSL_CERT_FILE": str(bundle), "TLS_TEST_KEY": TEST_KEY}

        done = subprocess.run(
            [sys.executable, "-c", CALLS_IN_A_FRESH_PROCESS, server.base_url],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["verified", "verified"]
        assert len(server.requests) == 2
