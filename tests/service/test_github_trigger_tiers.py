"""The trust policy's rule for outsiders (``server.trust.outsiders``) on the GitHub trigger
of a real `golem serve` and the loopback GitHub: a run for an issue whose discussion has an
author without write access (the issue's, or a comment's) is queued in the outsiders' tier
and its box starts there; an issue only people who may push wrote in gets the default.

The microvm tier is served here by a stand-in until the microvm backend is merged
(``microvm_stand_in``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from httpx_sse import connect_sse

from tests.blueprint.repos import make_remote
from tests.conftest import devbox_image
from tests.service.served import Served, serving
from tests.service.test_github_trigger import (
    SERVER_ENV,
    TOKEN,
    GitHub,
    deliver,
    gated_minion,
    green,
    labelled,
    remotes,
    trigger_config,
)

__all__ = ["remotes"]  # a fixture
pytestmark = [pytest.mark.bwrap, pytest.mark.docker]

MEMBER = "maintainer"
STRANGER = "passer-by"


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    with GitHub(token=TOKEN) as server:
        server.ci = green
        yield server


def microvm_stand_in() -> str:  # microvm stand-in
    """TODO(coordinator, at the microvm merge): the microvm tier's backend here is a stand-in,
    the docker backend (another backend than the default's, so that the run's box is visibly
    the tier's); it becomes ``type = "microvm"``, and the run's box then says backend
    ``microvm`` (``STAND_IN_BACKEND``) and a kernel not the host's."""
    return f'[engine.tiers.microvm]\ntype = "docker"\nimage = "{devbox_image("docker")}"\n'


STAND_IN_BACKEND = "docker"  # microvm stand-in
"""TODO(coordinator, at the microvm merge): ``"microvm"``."""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, github: GitHub, remotes: Path
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("trigger-tiers")
    config = trigger_config(github, remotes, gated_minion(home)) + (
        '[server.trust]\noutsiders = "microvm"\n' + microvm_stand_in()
    )
    with serving(home / "state", config=config, env=SERVER_ENV) as server:
        yield server


@pytest.fixture(scope="module")
def key(served: Served) -> str:
    return served.key("default")


def issue(github: GitHub, remotes: Path, name: str, author: str, *comments: str) -> str:
    """octo/NAME with issue #1 opened by ``author``, commented by ``comments``' authors;
    ``MEMBER`` may push to it, ``STRANGER`` may not (GitHub does not know them there)."""
    make_remote(remotes / "octo", name)
    repo = f"octo/{name}"
    github.set_permission(repo, MEMBER, "maintain")
    said = [(who, f"{who} agrees") for who in comments]
    github.add_issue(
        repo, 1, "add() subtracts", body="See calculator.py.", author=author, comments=said
    )
    return repo


def started(served: Served, key: str, repo: str) -> dict[str, Any]:
    """The run the issue's label started, as the API shows it."""
    answer = deliver(served, "issues", labelled(repo))
    assert answer.status_code == 202, answer.text
    assert answer.json()["status"] == "started", answer.text
    with served.client(key) as client:
        run: dict[str, Any] = client.get(f"/v1/runs/{answer.json()['run_id']}").json()
    return run


def cancel(served: Served, key: str, run_id: str) -> None:
    with served.client(key) as client:
        assert client.post(f"/v1/runs/{run_id}/cancel").status_code == 200


def first_box(served: Served, key: str, run_id: str) -> dict[str, Any]:
    """Approve the run's gate and follow it to its first box; that box_start event."""
    with (
        served.client(key) as follower,
        served.client(key) as actor,
        connect_sse(follower, "GET", f"/v1/runs/{run_id}/events") as events,
    ):
        for event in events.iter_sse():
            if event.event == "gate_wait":
                answer = actor.post(f"/v1/runs/{run_id}/gate", json={"decision": "approved"})
                assert answer.status_code == 200, answer.text
            if event.event == "box_start":
                return dict(json.loads(event.data))
            assert event.event != "run_end", event.data
    raise AssertionError(f"the events of {run_id} ended without a box")


def test_an_issue_opened_by_a_non_member_runs_in_the_outsiders_tier(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    run = started(served, key, issue(github, remotes, "strangers", STRANGER))
    assert run["tier"] == "microvm"
    try:
        box = first_box(served, key, run["id"])
        assert box["isolation"]["backend"] == STAND_IN_BACKEND
        with served.client(key) as client:
            shown = client.get(f"/v1/runs/{run['id']}").json()
        assert shown["tier"] == "microvm"
    finally:
        cancel(served, key, run["id"])


def test_a_comment_by_a_non_member_puts_a_members_issue_in_the_outsiders_tier(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    run = started(served, key, issue(github, remotes, "commented", MEMBER, MEMBER, STRANGER))
    cancel(served, key, run["id"])
    assert run["tier"] == "microvm"


def test_an_issue_only_members_wrote_in_runs_in_the_default_tier(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    run = started(served, key, issue(github, remotes, "members", MEMBER, MEMBER))
    cancel(served, key, run["id"])
    assert run["tier"] is None
