"""Isolation tiers: how strongly a box is kept from its host, weakest first.

- ``container``: the host's kernel, behind namespaces, seccomp and cgroups (the process
  backend's bubblewrap; docker and podman with runc);
- ``gvisor``: a kernel in user space between the box and the host's (the gvisor backend;
  docker and podman with the OCI runtime runsc);
- ``microvm``: a kernel of its own in a virtual machine (the microvm backend).

A tier names what a box needs; the backend that serves it on a host is configuration
(``[engine.tiers.<tier>]``; the default tier's is ``engine.backend``). The trust policy
(``[server.trust]``, ``server.policies.<role>.min_tier``) says the least tier each source
of work runs in: a request may raise its tier, never lower it (``Floor``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "TIERS",
    "TRIGGER_SOURCES",
    "Floor",
    "Isolation",
    "IsolationTier",
    "RepositoryTier",
    "TrustPolicy",
    "at_least",
    "rank",
    "strongest",
    "tier_of",
]

IsolationTier = Literal["container", "gvisor", "microvm"]
"""A rung of the isolation ladder (``TIERS`` orders them, weakest first)."""
TIERS: tuple[IsolationTier, ...] = ("container", "gvisor", "microvm")
RUNSC = "runsc"
"""gVisor's OCI runtime: a docker or podman backend running it isolates as ``gvisor``."""


def rank(tier: IsolationTier) -> int:
    """The tier's place on the ladder: 0 for ``container``, higher is stronger."""
    return TIERS.index(tier)


def at_least(tier: IsolationTier, floor: IsolationTier) -> bool:
    """Whether ``tier`` is ``floor`` or stronger."""
    return rank(tier) >= rank(floor)


def _field(backend: object, name: str) -> object:
    if isinstance(backend, Mapping):
        return backend.get(name)
    return getattr(backend, name, None)


def _runs_runsc(runtime: object) -> bool:
    """Whether an OCI runtime (a name the engine knows it by, or a path) is gVisor's."""
    if not isinstance(runtime, str) or not runtime:
        return False
    name = PurePosixPath(runtime).name
    return name == RUNSC or name.startswith(RUNSC + "-")


def tier_of(backend: object) -> IsolationTier:
    """The tier a backend configuration isolates at (a config model or its mapping): by
    its ``type``, and for docker (and podman through it) by its OCI runtime."""
    kind = _field(backend, "type") or "process"
    if kind in ("gvisor", "microvm"):
        return "gvisor" if kind == "gvisor" else "microvm"
    if kind == "docker" and _runs_runsc(_field(backend, "runtime")):
        return "gvisor"
    if kind in ("process", "docker"):
        return "container"
    raise ValueError(f"unknown backend type {kind!r}: its isolation tier is unknown")


class Isolation(BaseModel):
    """What isolation a box got: its tier, the backend that started it, for a microVM
    whether hardware virtualisation runs it (``kvm``) or emulation (``tcg``: slow), and for
    gVisor the platform and flags runsc runs it with (golem's choice for this host, or
    dockerd's for docker+runsc)."""

    model_config = ConfigDict(extra="forbid")

    tier: IsolationTier
    backend: str = Field(description="The backend: process, docker, gvisor, microvm.")
    runtime: str | None = Field(None, description="docker and podman: the OCI runtime.")
    accel: str | None = Field(None, description="A microVM's accelerator: kvm or tcg.")
    platform: str | None = Field(
        None,
        description="gVisor's platform, how its kernel catches the box's system calls: "
        "kvm, systrap or ptrace (the slowest).",
    )
    flags: list[str] = Field(
        default_factory=list,
        description="gVisor: the flags runsc runs the box with (rootless, platform, network "
        "mode...), as the gvisor backend chose them for this host or dockerd passes them.",
    )

    def __str__(self) -> str:
        """``container (process)``, ``gvisor (docker+runsc, kvm)``, ``microvm (TCG)``, and
        ``gvisor (ptrace)`` for the gvisor backend's own boxes: the tier, then how."""
        backend = f"{self.backend}+{self.runtime}" if self.runtime else self.backend
        how = [backend] if backend != self.tier else []
        how += [self.accel.upper()] if self.accel else []
        how += [self.platform] if self.platform else []
        return f"{self.tier} ({', '.join(how)})" if how else self.tier


@dataclass(frozen=True)
class Floor:
    """The least tier a source of work runs in, and the rule that says so (an option's
    full name, as a refusal shows it)."""

    tier: IsolationTier
    rule: str


def strongest(floors: Iterable[Floor | None]) -> Floor | None:
    """The strongest of ``floors`` (the first named, of equals), or None when none is."""
    best: Floor | None = None
    for floor in floors:
        if floor is not None and (best is None or rank(floor.tier) > rank(best.tier)):
            best = floor
    return best


class RepositoryTier(BaseModel):
    """The least tier of runs on repositories whose name matches ``pattern``."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        description="A regular expression the whole repository name must match: its host "
        "and path without scheme, user or .git (github.com/acme/widgets), or a local "
        "repository's path.",
        max_length=1024,
    )
    min_tier: IsolationTier

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return pattern


TRIGGER_SOURCES = ("automation", "github", "gitlab", "linear", "loop", "slack")
"""Every source a run is started from besides the API (a forge's webhook, Slack, Linear,
an automation, a goal loop): the name of its deliveries in the store, and the key of its
rule in ``server.trust.sources``."""


class TrustPolicy(BaseModel):
    """``[server.trust]``: the least isolation tier per source of work, besides each
    role's (``server.policies.<role>.min_tier``). The strongest rule that applies wins; a
    request may ask for a stronger tier, never a weaker one."""

    model_config = ConfigDict(extra="forbid")

    tenants: dict[str, IsolationTier] = Field(
        default_factory=dict,
        description="Per tenant: the least tier of its sessions and runs, whatever its "
        "keys' roles and whichever trigger started them.",
    )
    sources: dict[str, IsolationTier] = Field(
        default_factory=dict,
        description="Per source of work a trigger takes runs from (automation, github, "
        "gitlab, linear, loop, slack): the least tier of every run it starts, its follow-ups "
        "and the requests it queued.",
    )
    outsiders: IsolationTier | None = Field(
        None,
        description="Runs a trigger starts on what someone outside wrote: a forge's issue "
        "whose discussion (the issue, its comments) or a follow-up whose pull request's "
        "review has an author without write access to the repository; a Slack thread with "
        "a message by anyone server.slack.users does not name (a guest, another workspace, "
        "a bot); a Linear issue someone its people rule refuses wrote on; and every run no "
        "person asked for (a label a bot set, Linear's own workflow automation).",
    )
    repos: list[RepositoryTier] = Field(
        default_factory=list,
        description="Per repository pattern: the least tier of runs on those repositories "
        "(every pattern that matches counts).",
    )

    @field_validator("sources")
    @classmethod
    def _source_names(cls, sources: dict[str, IsolationTier]) -> dict[str, IsolationTier]:
        unknown = sorted(name for name in sources if name not in TRIGGER_SOURCES)
        if unknown:
            cased = [name.lower() for name in unknown if name.lower() in TRIGGER_SOURCES]
            hint = f" (sources are named in lower case: {', '.join(cased)})" if cased else ""
            raise ValueError(
                f"no trigger is named {', '.join(unknown)}{hint}: a source is one of "
                f"{', '.join(TRIGGER_SOURCES)} (docs/server.md#isolation-tiers-the-trust-policy)"
            )
        return sources
