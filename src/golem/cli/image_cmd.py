"""`golem image bootstrap|ls`: golem's base images, built from Debian's packages."""

from __future__ import annotations

import asyncio

import typer
from rich.table import Table

from golem.cli.options import docker_backend
from golem.core.console import say, say_json, terminal

__all__ = ["image_app"]

image_app = typer.Typer(
    rich_markup_mode=None, help="Build and list box images.", no_args_is_help=True
)


@image_app.command("bootstrap")
def bootstrap_command(
    flavour: str = typer.Option("devbox", "--flavour", help="One of: minimal, devbox."),
    docker: bool = typer.Option(True, "--docker/--no-docker", help="Import into the engine."),
    rootfs: bool = typer.Option(
        True, "--rootfs/--no-rootfs", help="Keep a root directory for the process backend."
    ),
    docker_host: str | None = typer.Option(None, "--docker-host", help="Engine socket."),
) -> None:
    """Build a base image with mmdebstrap; skipped when its content hash exists."""
    from golem.core.config import load_config
    from golem.sandbox.images import bootstrap

    config = load_config()
    api = docker_backend(docker_host).api if docker else None
    images_dir = config.state_dir / "images" if rootfs else None
    built = asyncio.run(bootstrap(flavour, api=api, images_dir=images_dir))
    verb = "built" if built.built else "up to date"
    say(f"{flavour} {verb} (hash {built.hash[:12]})")
    if built.tag:
        say(f"  docker image: {built.tag}")
    if built.rootfs:
        say(f"  process image directory: {built.rootfs}")


@image_app.command("kernel")
def kernel_command() -> None:
    """Fetch the microvm guest kernel (Debian's cloud kernel; never installed on the host).

    Unpacked into engine.backend.assets_dir; skipped when it is there."""
    from golem.core.config import MicroVMBackendConfig, load_config
    from golem.sandbox.backends.microvm.assets import find_kernel

    config = load_config().engine.backend
    if not isinstance(config, MicroVMBackendConfig):
        config = MicroVMBackendConfig()
    kernel = find_kernel(config)
    say(f"guest kernel {kernel.release}: {kernel.image}")


@image_app.command("build")
def build_command(
    tag: str = typer.Option(..., "--tag", help="Name of the image, e.g. my-org/devbox:1."),
    base: str = typer.Option("golem/devbox:latest", "--base", help="Image to start from."),
    install: list[str] | None = typer.Option(
        None, "--install", help="Debian package, or pip:NAME / npm:NAME (repeatable)."
    ),
    setup: str | None = typer.Option(None, "--setup", help="Shell script run as root."),
    docker_host: str | None = typer.Option(None, "--docker-host", help="Engine socket."),
) -> None:
    """Build a devbox image; skipped when one with the same content hash exists."""
    import docker

    from golem.core.config import ImageRecipe
    from golem.sandbox.image_build import build_image

    recipe = ImageRecipe(tag=tag, base=base, install=install or [], setup=setup)
    backend = docker_backend(docker_host)
    client = docker.DockerClient(base_url=backend.base_url, version="auto")
    try:
        result = asyncio.run(build_image(client, recipe))
    finally:
        client.close()
        backend.close()
    verb = "built" if result.built else "up to date"
    say(f"{result.tag} {verb} (hash {result.hash[:12]})")


@image_app.command("ls")
def list_command(
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    docker_host: str | None = typer.Option(None, "--docker-host", help="Engine socket."),
) -> None:
    """List golem's images in the engine."""
    from golem.sandbox.images import HASH_LABEL

    api = docker_backend(docker_host).api
    rows = [
        {
            "tag": (image.get("RepoTags") or ["<none>"])[0],
            "hash": (image.get("Labels") or {}).get(HASH_LABEL, "")[:12],
            "flavour": (image.get("Labels") or {}).get("golem.flavour", "recipe"),
            "size": int(image.get("Size", 0)),
        }
        for image in api.images(filters={"label": HASH_LABEL})
        if any(tag != "<none>:<none>" for tag in image.get("RepoTags") or [])
    ]
    if json_output:
        say_json(rows)
        return
    table = Table("TAG", "FLAVOUR", "HASH", "SIZE", box=None)
    for row in rows:
        table.add_row(row["tag"], row["flavour"], row["hash"], f"{row['size'] // 2**20} MiB")
    terminal().print(table)
