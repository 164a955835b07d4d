"""Which repository a Linear issue's run works on: its project's, else its team's, else
``repo``, else the only repository the configuration names; none when it names several and
none of them is the issue's."""

from __future__ import annotations

import pytest

from golem.core.config import load_config
from golem.core.errors import ConfigError
from golem.core.linear_config import LinearConfig


def test_a_project_wins_over_its_team_and_a_team_over_the_default() -> None:
    config = LinearConfig(
        teams={"ENG": "eng.git", "WEB": "web.git"}, projects={"Billing": "billing.git"},
        repo="default.git",
    )  # fmt: skip
    assert config.repository_for("ENG", "Billing", "p-1") == "billing.git"
    assert config.repository_for("ENG", "Other", "p-2") == "eng.git"
    assert config.repository_for("OPS", None, None) == "default.git"


def test_the_only_repository_named_serves_every_team_and_several_serve_none_but_theirs() -> None:
    only = LinearConfig(teams={"ENG": "eng.git"}, projects={"p-1": "eng.git"})
    assert only.repository_for("OPS", None, None) == "eng.git"
    several = LinearConfig(teams={"ENG": "eng.git", "WEB": "web.git"})
    assert several.repository_for("OPS", None, None) is None


def test_a_linear_trigger_that_starts_on_nothing_is_refused() -> None:
    with pytest.raises(ConfigError, match="start_on"):
        load_config({"server": {"linear": {"start_on": []}}})


@pytest.mark.parametrize(
    ("people", "says"),
    [
        ({"allow": ["ENG", "../ops"]}, "not Linear user ids or team keys"),
        ({"team_member": False}, "team_member"),
        ({"records": 0}, "records"),
    ],
)
def test_a_linear_people_rule_that_cannot_be_right_is_refused_naming_why(
    people: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        load_config({"server": {"linear": {"people": people}}})
