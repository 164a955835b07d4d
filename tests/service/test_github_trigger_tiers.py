"""The trust policy's rule for outsiders (``server.trust.outsiders``) on the GitHub trigger
of a real `golem serve` and the loopback GitHub: a run for an issue whose discussion has an
author without write access (the issue's, or a comment's) is queued in the outsiders' tier
and its box starts there (the microvm backend's: it answers with its guest's kernel); an
issue only people who may push wrote in gets the default. A `golem serve` cannot share the
session's booted guests: the module starts one microvm box (the other runs stop at their
gate)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from httpx_sse import connect_sse

from tests.blueprint.repos import make_remote
from tests.conftest import microvm_image
from tests.service.github_triggers import (
    SERVER_ENV,
    TOKEN,
    GitHub,
    acknowledged,
    comments_when,
    deliver,
    green,
    labelled,
    remotes,
    trigger_config,
)
from tests.service.served import Served, serving

__all__ = ["remotes"]  # a fixture
pytestmark = [pytest.mark.bwrap]

MEMBER = "maintainer"
STRANGER = "passer-by"


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    with GitHub(token=TOKEN) as server:
        server.ci = green
        yield server


KERNEL = "uname -r; cat /proc/version"


def gated_kernel(directory: Path) -> Path:
    """A blueprint that waits at a gate, then (approved) checks the repository out and
    prints its box's kernel (``KERNEL``): the least a run does in a box."""
    gate = {"id": "approve", "kind": "gate", "message": "Go on?", "timeout": 3600}
    nodes = [
        {**gate, "next": {"approved": "prepare", "rejected": "end"}},
        {"id": "prepare", "kind": "host", "action": "prepare", "next": "kernel"},
        {"id": "kernel", "kind": "box", "run": [KERNEL]},
    ]
    path = directory / "gated-kernel.yaml"
    path.write_text(yaml.safe_dump({"name": "gated-kernel", "start": "approve", "nodes": nodes}))
    return path


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, github: GitHub, remotes: Path
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("trigger-tiers")
    config = trigger_config(github, remotes, gated_kernel(home)) + (
        '[server.trust]\noutsiders = "microvm"\n'
        f'[engine.tiers.microvm]\ntype = "microvm"\nimage = "{microvm_image()}"\n'
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


def approved(served: Served, key: str, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Approve the run's gate and follow it to its end; its box_start, check_output and
    run_end events (type, data)."""
    seen: list[tuple[str, dict[str, Any]]] = []
    with (
        served.client(key) as follower,
        served.client(key) as actor,
        connect_sse(follower, "GET", f"/v1/runs/{run_id}/events") as events,
    ):
        for event in events.iter_sse():
            if event.event in ("box_start", "check_output", "run_end"):
                seen.append((event.event, json.loads(event.data)))
            if event.event == "gate_wait":
                answer = actor.post(f"/v1/runs/{run_id}/gate", json={"decision": "approved"})
                assert answer.status_code == 200, answer.text
            if event.event == "run_end":
                return seen
    raise AssertionError(f"the events of {run_id} stopped before its end")


@pytest.mark.microvm
def test_an_issue_opened_by_a_non_member_runs_in_the_outsiders_tier(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    run = started(served, key, issue(github, remotes, "strangers", STRANGER))
    assert run["tier"] == "microvm"
    seen = approved(served, key, run["id"])
    assert seen[-1][1]["status"] == "succeeded", seen[-1]
    (box,) = [data for kind, data in seen if kind == "box_start"]
    assert (box["isolation"]["tier"], box["isolation"]["backend"]) == ("microvm", "microvm")
    said = "".join(
        data["text"] for kind, data in seen if kind == "check_output" and data["stream"] == "stdout"
    ).splitlines()
    assert said[0] != os.uname().release  # the guest's kernel, not the host's
    assert said[1] != Path("/proc/version").read_text().strip()
    with served.client(key) as client:
        shown = client.get(f"/v1/runs/{run['id']}").json()
    assert shown["tier"] == "microvm"
    assert shown["isolation"]["backend"] == "microvm"


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


def test_a_label_a_bot_set_puts_a_members_issue_in_the_outsiders_tier_and_says_why(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = issue(github, remotes, "bot-labelled", MEMBER, MEMBER)
    by_a_bot = labelled(repo)
    by_a_bot["sender"] = {"login": "github-actions[bot]", "type": "Bot"}
    answer = deliver(served, "issues", by_a_bot)
    assert answer.json()["status"] == "started", answer.text
    run_id = answer.json()["run_id"]
    with served.client(key) as client:
        assert client.get(f"/v1/runs/{run_id}").json()["tier"] == "microvm"
    [ack] = [c for c in comments_when(github, repo, acknowledged(run_id)) if run_id in c["body"]]
    cancel(served, key, run_id)
    assert (
        "It runs as an outsider's: the label was set by github-actions[bot], a bot" in ack["body"]
    )
