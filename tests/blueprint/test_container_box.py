"""The one decision of whether a run's box gets a private container engine: checks that
need containers get a microVM box with one, with no configuration, when the host has a
microVM tier and the trust policy allows it; a blueprint that names the box's tier or
containers keeps what it names, and every refusal says why (the run's unverified reason)."""

from __future__ import annotations

import pytest

from golem.blueprint.container_box import container_box
from golem.core import GolemConfig
from golem.core.config import EngineConfig, load_config
from golem.core.isolation import TIERS

NEEDS = ["testcontainers among the declared dependencies", "compose file compose.yaml"]
MICROVM_TIER = {"tiers": {"microvm": {"type": "microvm", "image": "golem/devbox:test"}}}


def engine(settings: dict[str, object]) -> EngineConfig:
    config: GolemConfig = load_config({"engine": settings}, files=[])
    return config.engine


WITH_MICROVM = engine(MICROVM_TIER)


@pytest.mark.parametrize(
    "settings",
    [MICROVM_TIER, {"backend": {"type": "microvm", "image": "golem/devbox:test"}}],
    ids=["a-microvm-tier", "microvm-the-default-backend"],
)
@pytest.mark.parametrize("box", [{}, {"tier": "microvm"}], ids=["no-tier", "tier-microvm"])
def test_checks_needing_containers_get_a_microvm_box_with_an_engine_and_say_why(
    settings: dict[str, object], box: dict[str, object]
) -> None:
    choice = container_box(NEEDS, box, engine(settings), allowed=True)

    assert choice.give
    assert choice.overrides() == {"tier": "microvm", "containers": True}
    assert choice.why == (
        "checks need containers: testcontainers among the declared dependencies; "
        "compose file compose.yaml; box: microvm with containers"
    )


def test_checks_needing_no_containers_change_nothing() -> None:
    choice = container_box([], {}, WITH_MICROVM, allowed=True)

    assert not choice.give
    assert choice.overrides() == {}
    assert choice.why == ""


def test_a_blueprint_giving_containers_itself_is_left_as_it_is() -> None:
    choice = container_box(
        NEEDS, {"tier": "microvm", "containers": True}, WITH_MICROVM, allowed=True
    )

    assert (choice.give, choice.why) == (False, "")


@pytest.mark.parametrize("tier", [t for t in TIERS if t != "microvm"])
def test_a_blueprint_naming_a_tier_without_an_engine_keeps_it_and_says_why(tier: str) -> None:
    choice = container_box(NEEDS, {"tier": tier}, WITH_MICROVM, allowed=True)

    assert not choice.give
    assert choice.overrides() == {}
    assert f"the blueprint's box names tier {tier}, which has no container engine" in choice.why


@pytest.mark.parametrize("box", [{"containers": False}, {"tier": "gvisor", "containers": True}])
def test_a_blueprint_naming_containers_keeps_what_it_names_and_says_why(
    box: dict[str, object],
) -> None:
    choice = container_box(NEEDS, box, WITH_MICROVM, allowed=True)

    assert not choice.give
    assert choice.why.startswith(
        f"the blueprint's box says containers: {str(box['containers']).lower()}"
    )


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"tiers": {"gvisor": {"type": "gvisor"}}},
        {"tiers": {"microvm": {"type": "process"}}},  # a weaker backend under the tier's name
    ],
    ids=["process-only", "gvisor-tier", "process-as-microvm"],
)
def test_a_host_without_a_microvm_backend_gives_no_engine_and_says_so(
    settings: dict[str, object],
) -> None:
    choice = container_box(NEEDS, {}, engine(settings), allowed=True)

    assert not choice.give
    assert choice.why.startswith("no microVM tier on this host")


def test_a_run_the_trust_policy_gives_no_containers_gets_none_and_names_the_rule() -> None:
    choice = container_box(NEEDS, {}, WITH_MICROVM, allowed=False)

    assert not choice.give
    assert choice.overrides() == {}
    assert "server.policies.<role>.containers" in choice.why
