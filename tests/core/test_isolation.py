"""Isolation tiers: the ladder's order, the tier each backend configuration isolates at,
which backend serves a tier on a host, and the configuration of the trust policy."""

from __future__ import annotations

import pytest

from golem.core import load_config
from golem.core.errors import ConfigError, NoTierBackend
from golem.core.isolation import TIERS, Floor, Isolation, at_least, strongest, tier_of
from tests.core.isolation import RUNSC


def test_the_ladder_goes_from_the_hosts_kernel_to_a_kernel_of_its_own() -> None:
    assert TIERS == ("container", "gvisor", "microvm")
    assert at_least("microvm", "gvisor")
    assert at_least("gvisor", "gvisor")
    assert not at_least("container", "gvisor")


@pytest.mark.parametrize(
    ("backend", "tier"),
    [
        ({"type": "process"}, "container"),
        ({}, "container"),  # the default backend
        ({"type": "docker"}, "container"),
        ({"type": "docker", "runtime": "runc"}, "container"),
        ({"type": "docker", "runtime": "runsc"}, "gvisor"),
        ({"type": "docker", "runtime": "/usr/bin/runsc"}, "gvisor"),
        ({"type": "docker", "runtime": "runsc-kvm"}, "gvisor"),
        ({"type": "docker", "runtime": "my-runsc"}, "container"),  # not gVisor's
        ({"type": "gvisor"}, "gvisor"),
        ({"type": "microvm"}, "microvm"),
    ],
)
def test_a_backend_configuration_isolates_at_its_tier(backend: dict[str, str], tier: str) -> None:
    assert tier_of(backend) == tier


def test_a_backend_of_no_known_type_has_no_tier_rather_than_a_guessed_one() -> None:
    with pytest.raises(ValueError, match="unknown backend type 'kata'"):
        tier_of({"type": "kata"})


def test_a_configured_model_isolates_as_its_mapping_does() -> None:
    docker = load_config({"engine": {"backend": {"type": "docker", **RUNSC}}}, files=[])
    assert tier_of(docker.engine.backend) == "gvisor"
    assert docker.engine.default_tier == "gvisor"


def test_the_strongest_floor_wins_and_names_its_rule() -> None:
    role = Floor("gvisor", "server.policies.user.min_tier")
    tenant = Floor("microvm", "server.trust.tenants.acme")
    repo = Floor("microvm", "server.trust.repos[0] (x)")
    assert strongest([role, None, tenant, repo]) == tenant
    assert strongest([None, None]) is None


def test_what_a_box_got_reads_as_its_tier_and_how() -> None:
    assert str(Isolation(tier="microvm", backend="microvm", accel="tcg")) == "microvm (TCG)"
    assert (
        str(Isolation(tier="gvisor", backend="docker", runtime="runsc")) == "gvisor (docker+runsc)"
    )
    assert str(Isolation(tier="container", backend="process")) == "container (process)"
    assert str(Isolation(tier="gvisor", backend="gvisor")) == "gvisor"
    assert str(Isolation(tier="gvisor", backend="gvisor", platform="ptrace")) == "gvisor (ptrace)"
    docker = Isolation(tier="gvisor", backend="docker", runtime="runsc", platform="kvm")
    assert str(docker) == "gvisor (docker+runsc, kvm)"


def tiers(**tiers: object) -> dict[str, object]:
    return {"engine": {"tiers": tiers}}


def test_a_tier_is_served_by_its_backend_else_by_the_next_stronger_one() -> None:
    config = load_config(tiers(microvm={"type": "docker"}), files=[]).engine
    assert list(config.tier_backends()) == ["container", "microvm"]
    assert config.serving(None) == "container"  # engine.backend's
    assert config.serving("container") == "container"
    assert config.serving("gvisor") == "microvm"  # never weaker: the next stronger
    assert config.serving("microvm") == "microvm"


def test_a_tier_no_backend_here_serves_is_refused_naming_what_to_configure() -> None:
    config = load_config({}, files=[]).engine
    with pytest.raises(NoTierBackend, match=r"\[engine\.tiers\.gvisor\]"):
        config.serving("gvisor")


def test_a_container_box_on_a_gvisor_only_host_gets_gvisor() -> None:
    engine = load_config({"engine": {"backend": {"type": "docker", **RUNSC}}}, files=[]).engine
    assert engine.serving("container") == "gvisor"


def test_engine_backend_serves_its_own_tier_over_an_entry_of_engine_tiers() -> None:
    engine = load_config(tiers(container={"type": "docker"}), files=[]).engine
    assert engine.tier_backends()["container"].type == "process"


def test_a_tier_whose_backend_isolates_weaker_is_said_so() -> None:
    engine = load_config(
        tiers(gvisor={"type": "docker"}, microvm={"type": "docker", **RUNSC}),
        files=[],
    ).engine
    problems = engine.weaker_backends()
    assert len(problems) == 2
    assert "engine.tiers.gvisor: a docker backend isolates as container" in problems[0]
    assert "engine.tiers.microvm: a docker backend isolates as gvisor" in problems[1]


def test_a_tier_name_that_is_not_on_the_ladder_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"engine\.tiers\.kata"):
        load_config(tiers(kata={"type": "process"}), files=[])
    with pytest.raises(ConfigError, match=r"engine\.defaults\.tier"):
        load_config({"engine": {"defaults": {"tier": "untrusted"}}}, files=[])


def test_a_roles_old_trust_tier_option_is_refused_with_what_it_became() -> None:
    with pytest.raises(ConfigError, match=r"tier is now min_tier, an isolation tier"):
        load_config({"server": {"policies": {"user": {"tier": "untrusted"}}}}, files=[])
    with pytest.raises(ConfigError, match=r"server\.policies\.user\.min_tier"):
        load_config({"server": {"policies": {"user": {"min_tier": "untrusted"}}}}, files=[])


def test_the_trust_policy_takes_tiers_per_tenant_outsiders_and_repository() -> None:
    trust = load_config(
        {
            "server": {
                "policies": {"user": {"min_tier": "gvisor"}},
                "trust": {
                    "tenants": {"acme": "microvm"},
                    "outsiders": "microvm",
                    "repos": [{"pattern": r"github\.com/acme/.*", "min_tier": "gvisor"}],
                },
            }
        },
        files=[],
    ).server
    assert trust.policies["user"].min_tier == "gvisor"
    assert trust.trust.tenants == {"acme": "microvm"}
    assert trust.trust.repos[0].min_tier == "gvisor"


def test_a_repository_pattern_that_is_no_regular_expression_is_refused_at_load() -> None:
    with pytest.raises(ConfigError, match=r"server\.trust\.repos\.0\.pattern.*not a regular"):
        load_config(
            {"server": {"trust": {"repos": [{"pattern": "acme/(", "min_tier": "gvisor"}]}}},
            files=[],
        )
