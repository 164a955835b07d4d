"""Whether a run's box gets a private container engine: one place decides it, from what
the checks need (detection's ``containers``), what the blueprint's box names, what this
host serves and what the trust policy allows.

A run whose checks need containers gets them with no configuration: its box (the agent's
and the verification's) becomes a microVM box with ``containers`` when this host has a
microVM tier and the run may have one. A blueprint that names ``containers`` or a tier
below microVM keeps what it names; verification then says why the run is not verified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from golem.core.config import EngineConfig
from golem.core.isolation import IsolationTier

__all__ = ["ContainerBox", "container_box"]

MICROVM: IsolationTier = "microvm"


@dataclass(frozen=True)
class ContainerBox:
    """What the run's box gets for checks that need containers."""

    give: bool
    """Whether the box is made a microVM box with ``containers`` (the blueprint named
    neither)."""
    why: str
    """Given: why, for the run's events; not given: why the box has no engine ("" when
    the checks need none, or the blueprint gave one itself)."""

    def overrides(self) -> dict[str, object]:
        """The box settings this adds to the blueprint's."""
        return {"tier": MICROVM, "containers": True} if self.give else {}


NOT_NEEDED = ContainerBox(give=False, why="")


def container_box(
    needs: Sequence[str], box: Mapping[str, object], engine: EngineConfig, *, allowed: bool
) -> ContainerBox:
    """The choice for checks that need containers (``needs``: why, each), a blueprint
    whose box settings are ``box``, on a host whose engine is ``engine``, for a run the
    trust policy ``allowed`` containers."""
    tier, named = box.get("tier"), box.get("containers")
    if not needs or (named and tier in (None, MICROVM)):
        return NOT_NEEDED  # nothing needed, or the blueprint gave it itself
    if why_not := _why_not(tier, named, engine, allowed=allowed):
        return ContainerBox(give=False, why=why_not)
    return ContainerBox(
        give=True,
        why=f"checks need containers: {'; '.join(needs)}; box: microvm with containers",
    )


def _why_not(tier: object, named: object, engine: EngineConfig, *, allowed: bool) -> str:
    """Why the box may not be given a container engine ("" when it may)."""
    if named is not None:
        where = "" if tier in (None, MICROVM) else f" (tier: {tier})"
        return (
            f"the blueprint's box says containers: {str(bool(named)).lower()}{where}; give "
            "it tier: microvm and containers: true, or leave both out"
        )
    if tier not in (None, MICROVM):
        return (
            f"the blueprint's box names tier {tier}, which has no container engine; give "
            "it tier: microvm (or no tier) and containers: true"
        )
    backend = engine.tier_backends().get(MICROVM)
    if backend is None or backend.type != MICROVM:
        return (
            "no microVM tier on this host (the configured backend is "
            f"{engine.backend.type}; configure [engine.tiers.microvm], docs/sandbox.md)"
        )
    if not allowed:
        return (
            "the trust policy gives this run no container engine (the submitting key's "
            "role needs server.policies.<role>.containers = true; runs a webhook, Linear or "
            "an automation starts get none)"
        )
    return ""
