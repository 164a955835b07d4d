"""Pull-request reviews that trigger follow-up runs on a real `golem serve` (fixtures)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import golem.blueprint
from tests.service.github_triggers import (
    SERVER_ENV,
    TOKEN,
    WAIT,
    GitHub,
    gated_minion,
    green,
    trigger_config,
)
from tests.service.served import Served, serving

WRITER, READER = "maintainer", "passerby"

SECOND_WRITER = "co-maintainer"


def gated(directory: Path, name: str) -> Path:
    """Built-in blueprint ``name``, starting at a gate (approved: on to its first node)."""
    source = Path(golem.blueprint.__file__).parent / "builtin" / f"{name}.yaml"
    blueprint = yaml.safe_load(source.read_text())
    first = blueprint.get("start") or blueprint["nodes"][0]["id"]
    gate = {"id": "approve", "kind": "gate", "message": "Go on?", "timeout": 3600}
    blueprint["nodes"].append({**gate, "next": {"approved": first, "rejected": "end"}})
    blueprint.update(name=f"gated-{name}", start="approve")
    path = directory / f"gated-{name}.yaml"
    path.write_text(yaml.safe_dump(blueprint))
    return path


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    with GitHub(token=TOKEN) as server:
        server.ci = green
        yield server


@pytest.fixture(scope="module")
def remotes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("remotes")
    directory.chmod(0o755)
    return directory


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, github: GitHub, remotes: Path
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("review-trigger")
    config = trigger_config(github, remotes, gated_minion(home))
    config += f'follow_up_blueprint = "{gated(home, "follow-up")}"\n'
    config += '[server.trust]\noutsiders = "gvisor"\n[engine.tiers.gvisor]\ntype = "process"\n'
    with serving(home / "state", config=config, env=SERVER_ENV) as server:
        yield server


@pytest.fixture(scope="module")
def key(served: Served) -> str:
    return served.key("default")


def review_comment(
    repo: str, number: int, body: str, *, author: str = WRITER, reply_to: int | None = None
) -> dict[str, Any]:
    """A ``pull_request_review_comment`` delivery: a new comment on a line of the change."""
    user = {"login": author, "type": "User"}
    comment = {
        "id": 7000 + number * 100 + (reply_to or 0) % 97, "in_reply_to_id": reply_to,
        "body": body, "user": user, "path": "calculator.py", "line": 3,
        "author_association": "CONTRIBUTOR",
    }  # fmt: skip
    if reply_to is None:
        del comment["in_reply_to_id"]
    pull = {"number": number, "state": "open", "body": "", "user": {"login": "golem-bot"}}
    return {"action": "created", "comment": comment, "pull_request": pull,
            "repository": {"full_name": repo}, "sender": user}  # fmt: skip


def follow_ups(served: Served, key: str, repo: str, number: int) -> list[dict[str, Any]]:
    """The tenant's follow-up runs of pull request ``repo#number``, oldest first."""
    with served.client(key) as client:
        listed = client.get("/v1/runs", params={"limit": 500})
    listed.raise_for_status()
    found = [
        r for r in listed.json()
        if (r["request"].get("follow_up") or {}).get("number") == number
        and r["request"]["follow_up"]["repo"] == repo
    ]  # fmt: skip
    return sorted(found, key=lambda r: r["created"])


def runs_after(served: Served, key: str, repo: str, number: int, run_id: str) -> dict[str, Any]:
    """The follow-up started after ``run_id`` ended (polled, at most WAIT)."""
    deadline = time.monotonic() + WAIT
    while True:
        ids = [r["id"] for r in follow_ups(served, key, repo, number)]
        if run_id in ids and ids[-1] != run_id:
            return follow_ups(served, key, repo, number)[-1]
        assert time.monotonic() < deadline, f"no follow-up after {run_id} in {WAIT}s"
        time.sleep(0.05)  # a poll of the server's runs, not a wait for a result


FOLLOW_UP_SCRIPT = """\
turns:
  - tool_calls:
      - name: edit
        arguments:
          path: calculator.py
          old: '\"\"\"The sum of a and b.\"\"\"'
          new: '\"\"\"The sum of a and b (ints work too).\"\"\"'
  - tool_calls: [{{name: reply, arguments: {{thread: "{thread}", body: "Documented it."}}}}]
  - tool_calls: [{{name: finish, arguments: {{summary: "add() says it takes ints"}}}}]
"""
