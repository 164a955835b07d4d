"""`golem setup`: build what boxes need: the devbox image when missing, then [[images]]."""

from __future__ import annotations

import asyncio

import docker
import typer

from golem.core.config import DockerBackendConfig, load_config
from golem.sandbox.backends.docker import DockerBackend
from golem.sandbox.image_build import build_image
from golem.sandbox.images import bootstrap

__all__ = ["setup_command"]


def setup_command(
    docker_host: str | None = typer.Option(None, "--docker-host", help="Engine socket."),
) -> None:
    """Bootstrap golem's devbox image if missing and build every [[images]] entry.

    Safe on every deploy: images whose content hash exists are skipped.
    """
    config = load_config()
    backend_config = config.engine.backend
    if not isinstance(backend_config, DockerBackendConfig):
        backend_config = DockerBackendConfig()
    if docker_host:
        backend_config = backend_config.model_copy(update={"docker_host": docker_host})
    backend = DockerBackend(backend_config)
    backend.check()
    client = docker.DockerClient(base_url=backend.base_url, version="auto")
    try:
        devbox = asyncio.run(bootstrap("devbox", api=backend.api))
        typer.echo(f"devbox {'built' if devbox.built else 'up to date'}: {devbox.tag}")
        for recipe in config.images:
            result = asyncio.run(build_image(client, recipe))
            typer.echo(f"{result.tag} {'built' if result.built else 'up to date'}")
    finally:
        client.close()
        backend.close()
