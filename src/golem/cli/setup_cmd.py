"""`golem setup`: build what boxes need: the devbox image when missing, then [[images]]."""

from __future__ import annotations

import asyncio

import typer

from golem.cli.options import docker_backend
from golem.core.console import say

__all__ = ["setup_command"]


def setup_command(
    docker_host: str | None = typer.Option(None, "--docker-host", help="Engine socket."),
) -> None:
    """Bootstrap golem's devbox image if missing and build every image recipe of golem.toml.

    Safe on every deploy: images whose content hash exists are skipped.
    """
    import docker

    from golem.core.config import load_config
    from golem.sandbox.image_build import build_image
    from golem.sandbox.images import bootstrap

    config = load_config()
    backend = docker_backend(docker_host)
    client = docker.DockerClient(base_url=backend.base_url, version="auto")
    try:
        devbox = asyncio.run(bootstrap("devbox", api=backend.api))
        say(f"devbox {'built' if devbox.built else 'up to date'}: {devbox.tag}")
        for recipe in config.images:
            result = asyncio.run(build_image(client, recipe))
            say(f"{result.tag} {'built' if result.built else 'up to date'}")
    finally:
        client.close()
        backend.close()
