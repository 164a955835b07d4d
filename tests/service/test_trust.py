"""The trust policy's rules, each weighed alone and together: which applies to a session or
a run, which wins, how a weaker tier asked is refused (naming the rule) and what a request
that asks nothing gets. A served server's refusals are test_tier_policy.py's."""

from __future__ import annotations

import pytest

from golem.core import GolemConfig, load_config
from golem.core.errors import ConfigError, PolicyViolation
from golem.core.isolation import TRIGGER_SOURCES, Floor
from golem.service.trust import check_tier, floor_for, repository_name, tier_for


@pytest.fixture(scope="module")
def config() -> GolemConfig:
    return load_config(
        {
            "server": {
                "policies": {"user": {"min_tier": "gvisor"}},
                "trust": {
                    "tenants": {"acme": "microvm", "calm": "container"},
                    "outsiders": "microvm",
                    "repos": [
                        {"pattern": r"github\.com/wild/.*", "min_tier": "microvm"},
                        {"pattern": r"github\.com/.*/sandbox", "min_tier": "gvisor"},
                    ],
                },
            }
        },
        files=[],
    )


@pytest.mark.parametrize(
    ("repo", "name"),
    [
        ("https://github.com/wild/thing.git", "github.com/wild/thing"),
        ("https://token@GitHub.com:443/wild/thing/", "github.com/wild/thing"),
        ("git@github.com:wild/thing.git", "github.com/wild/thing"),
        ("ssh://git@github.com/wild/thing", "github.com/wild/thing"),
        ("file:///srv/git/wild.git", "/srv/git/wild"),
        ("/srv/git/wild.git/", "/srv/git/wild"),
    ],
)
def test_a_repository_is_named_by_its_host_and_path_however_its_url_is_spelled(
    repo: str, name: str
) -> None:
    assert repository_name(repo) == name


def test_no_rule_no_floor(config: GolemConfig) -> None:
    assert floor_for(config, tenant="other", role="trusted") is None
    assert floor_for(config, tenant="other", repo="https://github.com/tame/x.git") is None


def test_a_roles_min_tier_applies_to_its_keys(config: GolemConfig) -> None:
    floor = floor_for(config, tenant="other", role="user")
    assert floor == Floor("gvisor", "server.policies.user.min_tier")


def test_a_tenants_tier_applies_to_every_key_and_trigger_of_it(config: GolemConfig) -> None:
    for role in ("user", "trusted", "admin", None):
        floor = floor_for(config, tenant="acme", role=role)
        assert floor == Floor("microvm", "server.trust.tenants.acme")


def test_a_weaker_rule_never_lowers_a_stronger_one(config: GolemConfig) -> None:
    floor = floor_for(config, tenant="calm", role="user")  # container < the role's gvisor
    assert floor == Floor("gvisor", "server.policies.user.min_tier")


def test_every_repository_pattern_that_matches_counts(config: GolemConfig) -> None:
    floor = floor_for(config, tenant="other", repo="git@github.com:wild/sandbox.git")
    assert floor is not None
    assert floor.tier == "microvm"
    assert floor.rule == r"server.trust.repos[0] (github\.com/wild/.*)"
    floor = floor_for(config, tenant="other", repo="https://github.com/tame/sandbox")
    assert floor == Floor("gvisor", r"server.trust.repos[1] (github\.com/.*/sandbox)")


def test_a_pattern_matches_the_whole_name_not_a_part(config: GolemConfig) -> None:
    for repo in ("https://evil.example/github.com/wild/x", "https://github.com/wild"):
        assert floor_for(config, tenant="other", repo=repo) is None


def test_outsiders_get_their_tier_only_when_the_trigger_found_one(config: GolemConfig) -> None:
    assert floor_for(config, tenant="other", outsiders=False) is None
    assert floor_for(config, tenant="other", outsiders=True) == Floor(
        "microvm", "server.trust.outsiders"
    )


def test_asking_for_a_weaker_tier_is_refused_naming_the_rule(config: GolemConfig) -> None:
    floor = floor_for(config, tenant="other", role="user")
    with pytest.raises(PolicyViolation, match=r"'container' is weaker than 'gvisor'") as refused:
        check_tier("container", floor, "this key's role (user)")
    assert "(server.policies.user.min_tier)" in str(refused.value)
    assert refused.value.http_status == 403


def test_asking_for_the_floor_or_stronger_is_allowed_and_kept(config: GolemConfig) -> None:
    floor = floor_for(config, tenant="other", role="user")
    for asked in ("gvisor", "microvm"):
        check_tier(asked, floor, "this key's role (user)")
        assert tier_for(asked, floor, "container") == asked


def test_asking_nothing_gets_the_floor_or_the_default_when_stronger(config: GolemConfig) -> None:
    floor = Floor("gvisor", "server.policies.user.min_tier")
    assert tier_for(None, floor, "container") == "gvisor"
    assert tier_for(None, floor, "microvm") == "microvm"
    assert tier_for("container", floor, "container") == "gvisor"  # a server default, raised
    assert tier_for(None, None, "container") is None


def test_a_source_of_work_has_its_own_floor_and_the_strongest_rule_still_wins() -> None:
    config = load_config(
        {"server": {"trust": {"sources": {"slack": "gvisor"}, "tenants": {"acme": "microvm"}}}},
        files=[],
    )
    assert floor_for(config, tenant="other", source="slack") == Floor(
        "gvisor", "server.trust.sources.slack"
    )
    assert floor_for(config, tenant="other", source="github") is None
    assert floor_for(config, tenant="acme", source="slack") == Floor(
        "microvm", "server.trust.tenants.acme"
    )


def test_each_trigger_source_may_have_a_rule_and_an_unknown_one_is_refused() -> None:
    every = {source: "gvisor" for source in TRIGGER_SOURCES}
    config = load_config({"server": {"trust": {"sources": every}}}, files=[])
    for source in TRIGGER_SOURCES:
        assert floor_for(config, tenant="t", source=source) == Floor(
            "gvisor", f"server.trust.sources.{source}"
        )
    for unknown in ("jira", "Linear", "github-app", "api"):
        with pytest.raises(ConfigError) as refused:
            load_config({"server": {"trust": {"sources": {unknown: "gvisor"}}}}, files=[])
        assert f"no trigger is named {unknown}" in refused.value.message
        assert ", ".join(TRIGGER_SOURCES) in refused.value.message
