"""Flags shared by commands that start boxes, and how they become config overrides.

Imported by every command's module to build its help: the configuration models and the
backends are imported where a flag is used, not here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from golem.core.errors import ConfigError

if TYPE_CHECKING:
    from golem.core.config import GolemConfig
    from golem.sandbox.backends.docker import DockerBackend

__all__ = ["BoxFlags", "docker_backend", "parse_pairs", "warn_host_network"]


def parse_pairs(pairs: list[str] | None, flag: str) -> dict[str, str]:
    """``["K=V", ...]`` to a dict, with a clear error for a malformed pair."""
    result: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"{flag} {pair!r} must look like NAME=VALUE")
        result[name] = value
    return result


def docker_backend(docker_host: str | None) -> DockerBackend:
    """The docker backend as configured (or with defaults), ``--docker-host`` on top."""
    from golem.core.config import DockerBackendConfig, load_config
    from golem.sandbox.backends.docker import DockerBackend

    config = load_config().engine.backend
    if not isinstance(config, DockerBackendConfig):
        config = DockerBackendConfig()
    if docker_host:
        config = config.model_copy(update={"docker_host": docker_host})
    backend = DockerBackend(config)
    backend.check()
    return backend


class BoxFlags:
    """The box options of `golem exec` and `golem shell`."""

    def __init__(
        self,
        backend: str | None,
        image: str | None,
        network: str | None,
        memory: str | None,
        cpus: float | None,
        pids: int | None,
        timeout: float | None,
        env: list[str] | None,
        secret: list[str] | None,
        workspace: Path | None,
        config_file: Path | None,
        workdir: str | None = None,
        *,
        allow: list[str] | None = None,
        deny: list[str] | None = None,
        allow_cidr: list[str] | None = None,
        allow_port: list[int] | None = None,
        tier: str | None = None,
        containers: bool = False,
    ) -> None:
        self.defaults: dict[str, Any] = {
            key: value
            for key, value in {
                "image": image,
                "network": network,
                "memory": memory,
                "cpus": cpus,
                "pids": pids,
                "timeout": timeout,
                "workspace": str(workspace) if workspace else None,
                "workdir": workdir,
                "tier": tier,
                "containers": containers or None,
            }.items()
            if value is not None
        }
        if env:
            self.defaults["env"] = parse_pairs(env, "--env")
        if secret:
            self.defaults["secrets"] = parse_pairs(secret, "--secret")
        egress = {"allow": allow, "deny": deny, "allow_cidrs": allow_cidr, "ports": allow_port}
        if any(egress.values()):
            self.defaults["egress"] = {k: v for k, v in egress.items() if v}
        self.backend = backend
        self.config_file = config_file

    def load(self) -> GolemConfig:
        """The effective configuration with these flags on top."""
        from golem.core.config import load_config

        engine: dict[str, Any] = {"defaults": self.defaults}
        if self.backend:
            engine["backend"] = {"type": self.backend}
        files = None
        if self.config_file is not None:
            if not self.config_file.is_file():
                raise ConfigError(f"config file {self.config_file} does not exist")
            files = [self.config_file]
        config = load_config({"engine": engine}, files=files)
        network = config.engine.defaults.network
        if self.defaults.get("egress") and network != "filtered":
            raise ConfigError(
                "--allow, --deny, --allow-cidr and --allow-port need --network filtered "
                f"(the network is {network!r})"
            )
        if network == "host":
            warn_host_network()
        return config


def warn_host_network() -> None:
    """Say loudly that a box shares the host's network."""
    from golem.core.console import terminal

    terminal(stderr=True).print(
        "golem: WARNING: network=host gives the box the host's network, with no "
        "filtering and no log; use it for trusted work only, or --network filtered.",
        style="bold red",
    )


BACKEND = typer.Option(
    None,
    "--backend",
    help="The default backend: process (bubblewrap), docker, gvisor or microvm (a QEMU "
    "virtual machine).",
)
TIER = typer.Option(
    None,
    "--tier",
    help="Isolation tier: container, gvisor or microvm (the backend serving it is "
    "[engine.tiers.<tier>]); a server gives at least its trust policy's.",
)
CONTAINERS = typer.Option(
    False,
    "--containers",
    help="A private Docker engine inside the box (DOCKER_HOST set): microvm boxes only.",
)
IMAGE = typer.Option(None, "--image", help="Image: a root directory (process) or image name.")
NETWORK = typer.Option(
    None, "--network", help="none (default), filtered (only --allow hosts, via a proxy) or host."
)
ALLOW = typer.Option(
    None, "--allow", help=r"With --network filtered: a host name regex, e.g. '^pypi\.org$'."
)
ALLOW_PORT = typer.Option(
    None, "--allow-port", help="A port the box may reach (repeatable; default 80 and 443)."
)
DENY = typer.Option(None, "--deny", help="Host name regex refused even if allowed.")
ALLOW_CIDR = typer.Option(
    None, "--allow-cidr", help="Private address range the box may reach, e.g. 10.1.0.0/16."
)
MEMORY = typer.Option(None, "--memory", help="Memory limit, e.g. 256m.")
CPUS = typer.Option(None, "--cpus", help="CPU cores, e.g. 1 or 0.5.")
PIDS = typer.Option(None, "--pids", help="Maximum processes in the box.")
TIMEOUT = typer.Option(None, "--timeout", help="Seconds before the call is killed.")
ENV = typer.Option(None, "--env", "-e", help="NAME=VALUE for the box (repeatable).")
SECRET = typer.Option(None, "--secret", help="NAME=VALUE, masked as *** in all output.")
WORKSPACE = typer.Option(None, "--workspace", help="Host directory bound as /workspace.")
WORKDIR = typer.Option(None, "--workdir", "-w", help="Working directory inside /workspace.")
CONFIG = typer.Option(None, "--config", help="Read this golem.toml instead of the usual ones.")
