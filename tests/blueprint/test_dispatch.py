"""Step dispatch (golem.blueprint.steps.dispatch): every node kind and every host action
has its one step in a table; a follow-up blueprint names its own actions, which a run with
no pull request to follow up refuses; and a follow-up blueprint written before those
actions existed is read with them."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from golem.blueprint import BUILTINS, RunRequest, load_blueprint, parse_blueprint
from golem.blueprint.model import FOLLOW_UP_ACTIONS, HostAction, HostNode, Node
from golem.blueprint.steps.dispatch import (
    HOST_ACTIONS,
    NODE_KINDS,
    host_actions_for,
)
from golem.core.errors import InvalidRequest
from tests.blueprint.legacy_blueprints import written_before

FOLLOW_UP_YAML = Path(__file__).parents[2] / "src/golem/blueprint/builtin/follow-up.yaml"
TASK = RunRequest(repo="/srv/repo", task="fix it")
FOLLOW_UP = RunRequest.model_validate(
    {"repo": "/srv/repo", "follow_up": {"repo": "/srv/repo", "number": 1}}
)


def host_actions(request: RunRequest, source: str) -> dict[str, str]:
    blueprint = host_actions_for(parse_blueprint(source, "test"), request)
    return {n.id: n.action for n in blueprint.nodes if isinstance(n, HostNode)}


def test_every_node_kind_has_its_step() -> None:
    kinds = {member.model_fields["kind"].default for member in get_args(get_args(Node)[0])}
    assert set(NODE_KINDS) == kinds


def test_every_host_action_has_its_step() -> None:
    assert set(HOST_ACTIONS) == set(get_args(HostAction))
    assert set(get_args(HostAction)) >= FOLLOW_UP_ACTIONS


def test_the_follow_up_blueprint_names_what_it_runs() -> None:
    follow_up = load_blueprint("follow-up")
    actions = {n.action for n in follow_up.nodes if isinstance(n, HostNode)}
    assert actions == {"checkout_pull_request", "read_review", "install", "answer_review",
                       "escalate_review"}  # fmt: skip
    minion = load_blueprint("minion")
    assert not {n.action for n in minion.nodes if isinstance(n, HostNode)} & FOLLOW_UP_ACTIONS
    assert set(BUILTINS) == {"minion", "follow-up", "prepare"}
    prepare = load_blueprint("prepare")
    assert not {n.action for n in prepare.nodes if isinstance(n, HostNode)} & FOLLOW_UP_ACTIONS


@pytest.mark.parametrize("action", sorted(FOLLOW_UP_ACTIONS))
def test_a_follow_up_action_in_a_run_that_follows_nothing_up_is_refused(action: str) -> None:
    source = (
        f"name: custom\nnodes:\n  - {{id: first, kind: host, action: prepare, next: it}}\n"
        f"  - {{id: it, kind: host, action: {action}}}\n"
    )
    with pytest.raises(InvalidRequest, match=rf"node 'it' \({action}\) answers the review"):
        host_actions(TASK, source)
    assert host_actions(FOLLOW_UP, source) == {"first": "prepare", "it": action}


def test_a_follow_up_blueprint_written_before_its_actions_runs_them() -> None:
    old = written_before(FOLLOW_UP_YAML.read_text())
    assert "action: checkout_pull_request" not in old
    assert host_actions(FOLLOW_UP, old) == {
        "prepare": "checkout_pull_request",
        "hydrate": "read_review",
        "install": "install",
        "ship": "answer_review",
        "escalate": "escalate_review",
    }
    plain = host_actions(TASK, old)  # no pull request to follow up: the actions it names
    assert plain["prepare"] == "prepare"
    assert plain["ship"] == "ship"
