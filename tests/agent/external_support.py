"""Helpers of the external-agent tests: images with the real CLIs, built from recipes on
golem's devbox image, and engine configs whose ``[[credentials]]`` broker the wire
servers' keys into filtered boxes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import docker

from golem.agent import AgentEvent, ExternalOutput
from golem.core import GolemConfig, ImageRecipe, load_config
from golem.sandbox import Box, BoxSpec, Engine, LocalEngine
from golem.sandbox.image_build import build_image
from golem.testing.models import ANTHROPIC_KEY_ENV, OPENAI_KEY_ENV, AnthropicServer, OpenAIServer
from tests.conftest import devbox_image

__all__ = [
    "CLI_PACKAGES",
    "anthropic_credential",
    "cli_image",
    "cli_spec",
    "external_config",
    "lines",
    "open_box",
    "openai_credential",
]

CLI_PACKAGES = {
    "claude": ["npm:@anthropic-ai/claude-code@2.1.330"],
    "codex": ["npm:@openai/codex@0.169.0"],
    "pi": ["npm:node@22.23.3", "npm:@mariozechner/pi-coding-agent@0.73.1"],
    "aider": ["pip:aider-chat==0.86.2"],
}
"""The CLI versions whose flags and output golem's built-in templates were written for."""


@functools.cache
def cli_image(kind: str) -> str:
    """The devbox image with one CLI agent installed (built once per content hash)."""
    recipe = ImageRecipe(
        tag=f"golem-test/{kind}-devbox:latest",
        base=devbox_image("docker"),
        install=CLI_PACKAGES[kind],
    )
    client = docker.from_env(timeout=600)
    try:
        return asyncio.run(build_image(client, recipe)).tag
    finally:
        client.close()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def anthropic_credential(server: AnthropicServer) -> dict[str, Any]:
    """A ``[[credentials]]`` entry that brokers the Anthropic wire server's key."""
    return {
        "name": "anthropic",
        "host": r"^127\.0\.0\.1$",
        "header": "x-api-key",
        "env": "ANTHROPIC_API_KEY",
        "from_env": ANTHROPIC_KEY_ENV,
        "upstream": server.url,
        "base_url_env": "ANTHROPIC_BASE_URL",
    }


def openai_credential(server: OpenAIServer) -> dict[str, Any]:
    """A ``[[credentials]]`` entry that brokers the OpenAI wire server's key."""
    return {
        "name": "openai",
        "host": r"^127\.0\.0\.1$",
        "env": "OPENAI_API_KEY",
        "from_env": OPENAI_KEY_ENV,
        "upstream": server.base_url,
        "base_url_env": "OPENAI_BASE_URL",
    }


def external_config(
    state: Path, credentials: list[dict[str, Any]], image: str | None = None
) -> GolemConfig:
    """golem's config for these tests: the docker backend on ``image`` (the process
    backend when None), and ``credentials``."""
    data: dict[str, Any] = {"state_dir": str(state), "credentials": credentials}
    if image is not None:
        data["engine"] = {"backend": {"type": "docker", "image": image}}
    return load_config(data, files=[])


def cli_spec(engine: Engine, *servers: AnthropicServer | OpenAIServer, **changes: Any) -> BoxSpec:
    """A filtered box that may reach ``servers`` (on this host's loopback), with room for
    a CLI agent's runtime."""
    egress = {"allow_cidrs": ["127.0.0.1/32"], "ports": [_port(s.url) for s in servers] or [443]}
    settings: dict[str, Any] = {
        "network": "filtered", "egress": egress, "memory": "2g", "pids": 1024, **changes,
    }  # fmt: skip
    return engine.spec(**settings)


@contextlib.asynccontextmanager
async def open_box(
    config: GolemConfig, *servers: AnthropicServer | OpenAIServer, **changes: Any
) -> AsyncIterator[Box]:
    """A box of ``cli_spec`` from a fresh engine on ``config``; gone afterwards."""
    async with (
        LocalEngine(config) as engine,
        engine.session(cli_spec(engine, *servers, **changes)) as box,
    ):
        yield box


def lines(events: Iterable[AgentEvent], stream: str) -> list[str]:
    """The lines of one stream (stdout, stderr, golem), in order."""
    return [e.line for e in events if isinstance(e, ExternalOutput) and e.stream == stream]
