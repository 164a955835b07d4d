"""The engine starts each box on the backend of the isolation tier its spec names, keeps
what the box got in its record and on the box, and never lets the warm pool hand a box
of one tier to a request for another.

Until the gvisor backend is merged the ``gvisor`` tier is served here by the docker
backend (``STAND_IN``), a different backend than the default's, so that which backend
started a box is visible; at merge it becomes ``{"type": "gvisor"}`` and the box's
isolation says ``gvisor``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.core import GolemConfig, load_config
from golem.core.errors import NoTierBackend
from golem.sandbox import LocalEngine
from tests.conftest import devbox_image

pytestmark = [pytest.mark.bwrap, pytest.mark.docker]


def stand_in() -> dict[str, str]:
    """The backend serving the gvisor tier here (see the module's docstring)."""
    return {"type": "docker", "image": devbox_image("docker")}


@pytest.fixture
def config(tmp_path: Path) -> GolemConfig:
    engine = {"tiers": {"gvisor": stand_in()}, "pool": {"clean": 1}}
    return load_config({"state_dir": str(tmp_path / "state"), "engine": engine}, files=[])


@pytest.fixture
async def engine(config: GolemConfig) -> AsyncIterator[LocalEngine]:
    async with LocalEngine(config) as engine:
        yield engine


async def test_a_box_is_started_by_the_backend_of_the_tier_its_spec_names(
    engine: LocalEngine,
) -> None:
    async with engine.session({"tier": "gvisor"}) as strong, engine.session() as default:
        assert strong.spec.tier == "gvisor"
        assert strong.isolation is not None
        assert strong.isolation.backend == "docker"
        assert default.spec.tier == "container"  # the default backend's, named
        assert default.isolation is not None
        assert (default.isolation.tier, default.isolation.backend) == ("container", "process")
        assert (await strong.execute("echo in-gvisor")).stdout_text == "in-gvisor\n"
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
        assert strong.isolation.backend == "docker"
    async with engine.session({"tier": "container"}) as again:
        assert again.id == pooled


async def test_a_tier_no_backend_here_serves_starts_nothing(engine: LocalEngine) -> None:
    with pytest.raises(NoTierBackend, match=r"\[engine\.tiers\.microvm\]"):
        await engine.create_session({"tier": "microvm"})
    assert await engine.boxes() == []
