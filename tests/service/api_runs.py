"""Runs submitted to a real `golem serve` through its API, and followed to their end."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.blueprint.repos import EXAMPLES, make_remote
from tests.service.served import Served

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"

SLOW = Path(__file__).parents[1] / "blueprint" / "scripts" / "slow.yaml"

TASK = "Fix the failing tests of the calculator"

Event = tuple[str, dict[str, object]]


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


def follow(client: httpx.Client, run_id: str, until: Callable[[Event], bool] | None = None,
           after: int = 0) -> list[Event]:  # fmt: skip
    """The run's events from the API's stream, to the run's end (or the first ``until``)."""
    seen: list[Event] = []
    kind = ""
    headers = {"Last-Event-ID": str(after)} if after else {}
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if line.startswith("event:"):
                kind = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                seen.append((kind, json.loads(line.removeprefix("data:"))))
                if until is not None and until(seen[-1]):
                    return seen
    return seen


def submit(client: httpx.Client, remote: Path, model: str = FIX, **extra: str) -> httpx.Response:
    return client.post(
        "/v1/runs", json={"repo": str(remote), "task": TASK, "model": model, **extra}
    )


def boxes(served: Served) -> list[dict[str, object]]:
    """The boxes golem knows of in the server's state directory (``golem sessions ls``)."""
    listed = subprocess.run(
        [sys.executable, "-m", "golem", "sessions", "ls", "--json"],
        env=served.env, capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    found: list[dict[str, object]] = json.loads(listed.stdout)
    return found


def agent_working(event: Event) -> bool:
    return event[0] == "node_start" and event[1].get("kind") == "agent"
