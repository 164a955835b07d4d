"""`golem cluster`: the Ray cluster golem's boxes run on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.table import Table

from golem.cli import options
from golem.core.console import say_json, terminal
from golem.core.errors import ConfigError

__all__ = ["cluster_app"]

cluster_app = typer.Typer(
    rich_markup_mode=None, help="The Ray cluster golem's boxes run on ([cluster] ray_address)."
)


@cluster_app.command("status")
def status_command(
    as_json: bool = typer.Option(False, "--json", help="One JSON object per node."),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Nodes, their box slots and use, and the sessions and runs on each."""
    from golem.core.config import load_config

    config = load_config(files=[config_file] if config_file is not None else None)
    cluster = config.cluster
    if cluster.ray_address is None:
        raise ConfigError("[cluster] ray_address is not set: golem runs on this machine only")
    try:
        import ray  # Ray only when asked for

        from golem.cluster.status import cluster_status
    except ImportError as exc:
        raise ConfigError(f"Ray is not installed ({exc}): pip install 'golem[ray]'") from exc
    ray.init(address=cluster.ray_address, namespace=cluster.namespace, log_to_driver=False)
    try:
        nodes = asyncio.run(cluster_status(cluster.slot_resource, cluster.namespace)).nodes
    finally:
        ray.shutdown()
    if as_json:
        for node in nodes:
            say_json(node.model_dump(), indent=None)
        return
    table = Table(
        "name", "node", "address", "alive", "slots", "taken", "box host", "sessions", "runs"
    )
    for node in nodes:
        table.add_row(
            node.name,
            node.node_id[:12],
            node.address,
            "yes" if node.alive else "no",
            str(node.slots),
            str(node.taken),
            "up" if node.box_host else "-",
            _ids(node.sessions),
            _ids(node.runs),
        )
    terminal().print(table)


def _ids(ids: list[str] | None) -> str:
    """A node's session or run ids for the table ("?": its box host did not answer)."""
    return "?" if ids is None else " ".join(ids) or "-"
