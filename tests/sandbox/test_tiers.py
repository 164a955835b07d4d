"""The engine starts each box on the backend of the isolation tier its spec names, keeps
what the box got in its record and on the box, and never lets the warm pool hand a box
of one tier to a request for another. The ``gvisor`` tier is served by the gvisor
backend: its boxes answer with gVisor's kernel, not the host's."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.core import GolemConfig, load_config
from golem.core.errors import NoTierBackend
from golem.sandbox import Box, LocalEngine

pytestmark = [pytest.mark.bwrap, pytest.mark.gvisor]


@pytest.fixture
def config(tmp_path: Path) -> GolemConfig:
    engine = {"tiers": {"gvisor": {"type": "gvisor"}}, "pool": {"clean": 1}}
    return load_config({"state_dir": str(tmp_path / "state"), "engine": engine}, files=[])


@pytest.fixture
async def engine(config: GolemConfig) -> AsyncIterator[LocalEngine]:
    async with LocalEngine(config) as engine:
        yield engine


async def kernel(box: Box) -> tuple[str, str]:
    """The box's kernel as it says it: ``uname -r`` and ``/proc/version``."""
    said = (await box.execute("uname -r; cat /proc/version")).stdout_text.splitlines()
    return said[0], said[1]


HOST_KERNEL = (os.uname().release, Path("/proc/version").read_text().strip())


async def test_a_box_is_started_by_the_backend_of_the_tier_its_spec_names(
    engine: LocalEngine,
) -> None:
    async with engine.session({"tier": "gvisor"}) as strong, engine.session() as default:
        assert strong.spec.tier == "gvisor"
        assert strong.isolation is not None
        assert (strong.isolation.tier, strong.isolation.backend) == ("gvisor", "gvisor")
        assert default.spec.tier == "container"  # the default backend's, named
        assert default.isolation is not None
        assert (default.isolation.tier, default.isolation.backend) == ("container", "process")
        release, version = await kernel(strong)
        assert release != HOST_KERNEL[0]  # gVisor's own kernel answers
        assert version != HOST_KERNEL[1]
        assert await kernel(default) == HOST_KERNEL
        recorded = {info.id: info.isolation for info in await engine.boxes()}
        assert recorded[strong.id] == strong.isolation
        assert recorded[default.id] == default.isolation


async def test_the_warm_pool_never_hands_a_box_of_one_tier_to_another(
    engine: LocalEngine,
) -> None:
    async with engine.session() as first:
        pooled = first.id
    assert pooled in engine.pool.ids()  # wiped and kept for the next container box
    async with engine.session({"tier": "gvisor"}) as strong:
        assert strong.id != pooled
        assert strong.isolation is not None
        assert (strong.isolation.tier, strong.isolation.backend) == ("gvisor", "gvisor")
    async with engine.session({"tier": "container"}) as again:
        assert again.id == pooled


async def test_a_tier_no_backend_here_serves_starts_nothing(engine: LocalEngine) -> None:
    with pytest.raises(NoTierBackend, match=r"\[engine\.tiers\.microvm\]"):
        await engine.create_session({"tier": "microvm"})
    assert await engine.boxes() == []
