"""`golem doctor`: which backends work on this host, why the others do not, how fast a box
of each starts (a real box: a microVM is booted, and says whether KVM or TCG runs it), and
which backend serves each isolation tier of the configuration."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from golem.cli import options
from golem.core.console import markup, say_json, terminal
from golem.core.errors import ConfigError

if TYPE_CHECKING:
    from golem.core.config import GolemConfig
    from golem.sandbox.probe import Probe

__all__ = ["doctor_command"]


def doctor_command(
    backend: list[str] | None = typer.Option(
        None, "--backend", help="Only this backend (repeatable), e.g. docker+runsc."
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", help="Seconds each backend gets to start a box (default: 300)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    config_file: Path | None = options.CONFIG,
) -> None:
    """List each backend: whether it works here and why not, with its measured start time;
    and the backend serving each isolation tier."""
    from golem.core.config import load_config
    from golem.sandbox.probe import PROBE_TIMEOUT, candidates, probe_all

    config = load_config(files=[config_file] if config_file is not None else None)
    known = [candidate.name for candidate in candidates(config)]
    unknown = sorted(set(backend or []) - set(known))
    if unknown:
        raise ConfigError(f"--backend {', '.join(unknown)}: golem knows {', '.join(known)}")
    probes = asyncio.run(probe_all(config, backend or None, timeout=timeout or PROBE_TIMEOUT))
    tiers = _tiers(config)
    if json_output:
        found = {"backends": [p.model_dump() for p in probes], "tiers": tiers}
        say_json(found)
        return
    console = terminal()
    console.print(_table(probes))
    for tier, served in tiers.items():
        console.print(f"tier {tier}: {served}", highlight=False)
    for problem in config.engine.weaker_backends():
        console.print(markup("[yellow]warning:[/] {}", problem), highlight=False)


def _table(probes: list[Probe]) -> Table:
    table = Table("backend", "tier", "works", "start", "kernel", "why not")
    for found in probes:
        start = f"{found.start_seconds * 1000:.0f} ms" if found.start_seconds is not None else "-"
        kernel = "-"
        if found.kernel is not None:
            kernel = f"{found.kernel} ({'its own' if found.own_kernel else 'the host'}'s)"
        if found.accel:
            kernel += f", {found.accel.upper()}" + (" (slow)" if found.accel == "tcg" else "")
        table.add_row(
            found.name,
            found.tier or "-",
            "yes" if found.works else "no",
            start,
            kernel,
            found.why_not or "",
        )
    return table


def _tiers(config: GolemConfig) -> dict[str, str]:
    """Each isolation tier and what serves it under this configuration."""
    from golem.core.isolation import TIERS

    engine = config.engine
    served = engine.tier_backends()
    shown: dict[str, str] = {}
    for tier in TIERS:
        if tier in served:
            source = "engine.backend" if tier == engine.default_tier else f"engine.tiers.{tier}"
            shown[tier] = f"{served[tier].type} ({source})"
        else:
            stronger = next((t for t in served if TIERS.index(t) > TIERS.index(tier)), None)
            shown[tier] = f"served by {stronger}" if stronger else "no backend: boxes refused"
    return shown
