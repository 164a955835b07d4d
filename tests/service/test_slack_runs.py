"""Slack to a pull request, end to end: a real `golem serve` whose runs run in real boxes
with a scripted model and the local forge, a loopback Slack Web API. A mention runs to a
pull request, its one status message edited in place as it goes (the gate before ship
approved by the status message's button), and a reply when it ends with the pull request,
its checks and its cost; a later mention in the thread follows up on the same branch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from golem.testing.slack_server import SlackServer
from tests.blueprint.repos import branch_commits, make_remote
from tests.service.polling import eventually
from tests.service.served import Served, serving
from tests.service.slack_kit import (
    ALICE,
    BOT_TOKEN,
    CHANNEL,
    SERVER_ENV,
    add_people,
    buttons,
    click,
    mention,
    replies_saying,
    run_of,
    slack_config,
    status_posts,
    status_showing,
)

pytestmark = pytest.mark.bwrap

GATED = Path(__file__).with_name("dashboard_gate.yaml")  # the minion, a gate before ship
MODEL = Path(__file__).with_name("slack_fix.yaml")
FINAL = ("succeeded", "unverified", "escalated", "failed", "cancelled")


@dataclass(frozen=True)
class Shipped:
    """The first run: asked in a thread, shipped to a pull request."""

    run_id: str
    thread_ts: str
    status_ts: str
    end: dict[str, Any]


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackServer]:
    with SlackServer(token=BOT_TOKEN) as server:
        add_people(server)
        yield server


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("slack-runs-remotes")
    directory.chmod(0o755)
    return make_remote(directory)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, slack: SlackServer, remote: Path
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("slack-runs")
    config = slack_config(slack, GATED, {"calculator": remote}, model=MODEL)
    with serving(home / "state", config=config, env=SERVER_ENV) as server:
        yield server


@pytest.fixture(scope="module")
def acme(served: Served) -> str:
    return served.key("acme")


def ended(served: Served, key: str, run_id: str) -> dict[str, Any]:
    """The run, once it has ended."""

    def probe() -> dict[str, Any] | None:
        run = run_of(served, key, run_id)
        return run if run["status"] in FINAL else None

    return eventually(probe, f"the end of {run_id}")


@pytest.fixture(scope="module")
def shipped(served: Served, slack: SlackServer, acme: str) -> Shipped:
    """Alice asks in a thread; the run waits at its gate; she approves with the button."""
    root = slack.add_message(CHANNEL, "add(2, 3) gives -1: see calculator.py", user=ALICE)
    answer, _, _ = mention(served, slack, "please fix add()", thread_ts=root)
    assert answer.json()["status"] == "started", answer.text
    run_id = answer.json()["run_id"]
    status_ts, _ = status_showing(slack, run_id, lambda m: "golem.approve" in buttons(m))
    approved = click(served, "golem.approve", run_id, status_ts)
    assert approved.json()["status"] == "ok", approved.text
    end = ended(served, acme, run_id)
    return Shipped(run_id, root, status_ts, end)


def test_a_mention_runs_to_a_pull_request_in_one_status_message_and_a_final_reply(
    served: Served, slack: SlackServer, acme: str, shipped: Shipped
) -> None:
    assert shipped.end["status"] == "succeeded", shipped.end.get("error")
    pr = shipped.end["pr"]
    assert pr["number"] == 1
    [post] = status_posts(slack, shipped.run_id)  # one status message, in the thread
    assert post.args["thread_ts"] == shipped.thread_ts
    edits = [c for c in slack.calls("chat.update") if c.args["ts"] == shipped.status_ts]
    assert len(edits) >= 2, "the status message was not kept up to date"
    shown = [json.dumps(c.args["blocks"]) for c in edits]
    assert any("running" in c.args["text"] for c in edits)  # it said what it was doing
    assert any("waiting" in c.args["text"] for c in edits)  # and that it waited at the gate
    _, final = status_showing(slack, shipped.run_id, lambda m: "succeeded" in m["text"])
    assert buttons(final) == []
    assert ":white_check_mark: test" in shown[-1]
    assert "pull request #1" in json.dumps(final["blocks"])
    [reply] = eventually(
        lambda: replies_saying(slack, shipped.thread_ts, f"`{shipped.run_id}` opened") or None,
        "the final reply",
    )
    text = reply.args["text"]
    assert text.startswith(f"<@{ALICE}> golem run `{shipped.run_id}` opened pull request #1")
    assert f"`{pr['url']}`" in text  # golem://local/...: shown, never linked
    assert ":white_check_mark: test" in text
    assert f"cost ${shipped.end['cost_usd']:.4f}" in text
    assert shipped.end["cost_usd"] > 0


def test_a_later_mention_in_the_thread_follows_up_on_the_same_branch(
    served: Served, slack: SlackServer, acme: str, shipped: Shipped, remote: Path
) -> None:
    first = shipped.end
    answer, _, _ = mention(served, slack, "also note it in NOTES.md", thread_ts=shipped.thread_ts)
    assert answer.json()["status"] == "started", answer.text
    run_id = answer.json()["run_id"]
    asked = run_of(served, acme, run_id)["request"]["follow_up"]
    assert (asked["number"], asked["parent_run"]) == (first["pr"]["number"], shipped.run_id)
    assert asked["requested_by"] == f"slack:{ALICE}"
    assert asked["request"].startswith("also note it in NOTES.md\n")
    end = ended(served, acme, run_id)
    assert end["status"] == "succeeded", end.get("error")
    assert end["branch"] == first["branch"]
    assert end["commit"] != first["commit"]
    commits = branch_commits(remote, first["branch"])
    assert len(commits) == 2  # the run's commit, then the follow-up's on top
    status_showing(slack, run_id, lambda m: "succeeded" in m["text"])
    assert len(status_posts(slack, run_id)) == 1
    [reply] = eventually(
        lambda: replies_saying(slack, shipped.thread_ts, f"`{run_id}` pushed to") or None,
        "the follow-up's reply",
    )
    assert "pull request #1" in reply.args["text"]
