"""Configuration of dependency installs (``[dependencies]`` in golem.toml): the install box
a run's ``install`` step starts, and the cache of what installs made."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from golem.core.hostnames import HostPatterns
from golem.core.sizes import ByteSize

__all__ = ["DependenciesConfig", "PreparedConfig"]


class DependenciesConfig(BaseModel):
    """``[dependencies]``: how a repository's dependencies are installed and kept."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True,
        description="Install in an install box that reaches the registries, and cache what "
        "it makes per repository and lockfile; false: the install commands run in the run's "
        "own box (with its network), every run.",
    )
    cache_dir: Path | None = Field(
        None, description="Where the archives are kept; None: STATE_DIR/cache/dependencies."
    )
    max_bytes: ByteSize = Field(
        10 * 1024**3,
        ge=1,
        description="Most bytes all cached archives take; past it, the least recently used "
        "are removed.",
    )
    idle_timeout: float = Field(
        120.0,
        gt=0,
        description="Seconds an install command may print nothing before it is stopped (a "
        "registry that stalls fails the install instead of hanging).",
    )
    timeout: float = Field(1800.0, gt=0, description="Seconds one install command may take.")
    registries: HostPatterns = Field(
        default_factory=list,
        description=r"Host name regexes the install box may reach besides the ecosystems' "
        r"registries (a private mirror, e.g. '^pypi\.corp\.example$').",
    )
    network: Literal["filtered", "host"] = Field(
        "filtered",
        description="The install box's network: 'filtered' (the registries and the engine's "
        "egress allow list, through golem's proxy) or 'host' (trusted setups only).",
    )
    repository_registries: bool = Field(
        True,
        description="Let a repository widen its install box's egress with the hosts its "
        ".golem.toml names ([dependencies] registries); false: only the registries golem "
        "knows for the recognised ecosystems (pypi.org, registry.npmjs.org, ...) and these "
        "registries, the rest ignored with a note in the run. A server that runs untrusted "
        "repositories should choose false.",
    )


class PreparedConfig(BaseModel):
    """``[prepared]``: prepared repositories, a snapshot of a box after the checkout, the
    install, the setup and a warm-up, that runs on the repository start from."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        True,
        description="Start a run's box from its tenant's prepared snapshot of the run's "
        "repository, base branch and image when there is one (`golem prepare` makes it); "
        "false: every run starts from an empty box.",
    )
    warmup: str = Field(
        "",
        max_length=4000,
        description="A shell command `golem prepare` runs in the box after the setup, before "
        "the snapshot (a build or a type-check that fills caches, e.g. 'make build'); empty: "
        "none.",
    )
    warmup_timeout: float = Field(1800.0, gt=0, description="Seconds the warm-up command may take.")
