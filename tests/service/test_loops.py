"""Goal loops against a real `golem serve` with a scripted model and the local forge: runs
on one branch, each from the last one's result, judged by a command run in the box
(``python3 -m unittest``) whose failing tests golem's report parsers count. A loop reaches
its goal in two iterations (across a SIGKILL of its server, starting nothing twice); one
stops after two iterations in a row without progress; one stops at its budget; and a loop
is paused, resumed and stopped through the API."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.blueprint.repos import EXAMPLES, branch_commits, git
from tests.service.served import Served, fresh_tenant, launch

pytestmark = pytest.mark.bwrap

SCRIPTS = Path(__file__).with_name("loops")
UNTIL = "python3 -m unittest"
GOAL = "Make the calculator's tests pass."
WAIT = 300.0  # seconds a loop may take to get somewhere (each iteration is a whole run)
Loop = dict[str, Any]

NEG = '''

def neg(a: float) -> float:
    """a, negated."""
    return a
'''
NEG_TEST = """

class NegTest(unittest.TestCase):
    def test_neg(self) -> None:
        self.assertEqual(neg(2), -2)
"""

STAMP_TEST = '''"""Whether the build was stamped."""

import os
import unittest


class StampTest(unittest.TestCase):
    def test_stamped(self) -> None:
        self.assertTrue(os.path.exists(".stamp"), "no .stamp file")
'''


def two_bug_remote(parent: Path, name: str) -> Path:
    """A bare repository of examples/calculator with a second bug: neg() does not negate
    (three failing tests: test_add, test_mean, test_neg)."""
    work = parent / f"{name}-seed"
    shutil.copytree(EXAMPLES / "calculator", work)
    (work / "calculator.py").write_text((work / "calculator.py").read_text() + NEG)
    tests = (work / "test_calculator.py").read_text()
    tests = tests.replace(
        "from calculator import add, mean", "from calculator import add, mean, neg"
    )
    tests = tests.replace(
        '\n\nif __name__ == "__main__":', NEG_TEST + '\n\nif __name__ == "__main__":'
    )
    (work / "test_calculator.py").write_text(tests)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "seed", cwd=work)
    remote = parent / f"{name}.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    return remote


def stamp_remote(parent: Path) -> Path:
    """A bare repository of examples/calculator (one bug, which calculator-fix.yaml fixes)
    with a test of its own that fails before and after that fix, the same way, in a file
    neither the fix nor the task touches or names."""
    work = parent / "stamp-seed"
    shutil.copytree(EXAMPLES / "calculator", work)
    (work / "test_stamp.py").write_text(STAMP_TEST)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "seed", cwd=work)
    remote = parent / "stamp.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    return remote


def asked(remote: Path, script: str, **extra: object) -> dict[str, object]:
    """A loop request on ``remote`` whose runs use the scripted model ``script``."""
    return {
        "repo": str(remote), "goal": GOAL, "until": UNTIL, "max_iterations": 4,
        "model": f"scripted:{SCRIPTS / script}", **extra,
    }  # fmt: skip


def loop_when(client: httpx.Client, loop_id: str, condition: Callable[[Loop], bool]) -> Loop:
    """The loop, once ``condition`` holds for it (looked at every half second, at most
    WAIT)."""
    deadline = time.monotonic() + WAIT
    while True:
        loop: Loop = client.get(f"/v1/loops/{loop_id}").raise_for_status().json()
        if condition(loop):
            return loop
        assert time.monotonic() < deadline, f"the loop never got there: {loop}"
        time.sleep(0.5)


def ended(loop: Loop) -> bool:
    return loop["status"] in ("complete", "stopped", "budget-limited")


def settled(loop: Loop) -> bool:
    """No iteration of the loop is running."""
    return all(iteration["progress"] is not None for iteration in loop["iterations"])


def test_a_loop_reaches_its_goal_in_two_iterations_on_one_branch_across_a_restart(
    tmp_path: Path, reachable_dir: Path
) -> None:
    remote = two_bug_remote(reachable_dir, "two-bugs")
    server = launch(tmp_path / "state")
    try:
        with server.client(server.key("acme", "trusted")) as client:
            started = client.post("/v1/loops", json=asked(remote, "step.yaml"))
            assert started.status_code == 202, started.text
            loop_id = started.json()["id"]
            assert started.json()["status"] == "active"
            loop_when(client, loop_id, lambda loop: len(loop["iterations"]) >= 1)
        server.kill()  # mid-iteration: the restarted server goes on, starting nothing twice
        server = launch(tmp_path / "state", admin_key=server.admin_key)
        with server.client(server.key("acme", "trusted")) as client:
            loop = loop_when(client, loop_id, ended)
            runs = client.get("/v1/runs").json()
    finally:
        server.stop()
    assert loop["status"] == "complete", loop
    assert "passed in iteration 2" in loop["reason"]
    first, second = loop["iterations"]
    assert loop["baseline"]["failures"] == 3  # test_add, test_mean, test_neg
    assert (first["measure"]["failures"], first["progress"]) == (1, True)
    assert first["verdict"] == "3 → 1 failing tests"
    assert second["measure"]["passed"]
    assert second["progress"]
    assert sorted(run["id"] for run in runs) == sorted([first["run_id"], second["run_id"]])
    by_id = {run["id"]: run for run in runs}
    follow_up = by_id[second["run_id"]]["request"]["follow_up"]
    assert follow_up["number"] == loop["pr"]["number"] == by_id[first["run_id"]]["pr"]["number"]
    assert by_id[second["run_id"]]["request"]["goal_check"] == UNTIL
    commits = branch_commits(remote, loop["pr"]["branch"])
    assert len(commits) == 2  # the second iteration went on from the first one's commit
    source = git("show", f"{loop['pr']['branch']}:calculator.py", cwd=remote)
    assert "return a + b" in source
    assert "return -a" in source
    assert loop["spent_usd"] == pytest.approx(sum(run["cost_usd"] for run in runs))


def test_a_loop_started_by_the_cli_stops_after_two_iterations_in_a_row_without_progress(
    served: Served, reachable_dir: Path
) -> None:
    """`golem loop --wait` keeps the loop in the store, the server drives it, and the
    command stays until it ends, saying each iteration's verdict."""
    remote = two_bug_remote(reachable_dir, "idle")
    tenant = fresh_tenant("idle")
    command = [
        sys.executable, "-m", "golem", "loop", "--repo", str(remote), "--goal", GOAL,
        "--until", UNTIL, "--max-iterations", "4", "--tenant", tenant, "--wait",
        "--model", f"scripted:{SCRIPTS / 'idle.yaml'}",
    ]  # fmt: skip
    done = subprocess.run(
        command, check=False, env=served.env, capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 1, done.stderr  # stopped
    loop_id = done.stdout.split(":", 1)[0]
    for number in (1, 2):
        assert f"iteration {number}: 3 → 3 failing tests" in done.stdout, done.stdout
    with served.client(served.key(tenant, "trusted")) as client:
        loop = client.get(f"/v1/loops/{loop_id}").json()
        runs = client.get("/v1/runs").json()
    assert loop["status"] == "stopped", loop
    assert "no progress on the goal check in 2 iterations in a row" in loop["reason"]
    assert [i["progress"] for i in loop["iterations"]] == [False, False]
    assert len(runs) == 2  # max_iterations (4) is not what stopped it
    assert [run["status"] for run in runs] == ["escalated"] * 2  # the goal held against them
    assert loop["role"] is None  # the operator's, from the host


def test_a_loop_is_budget_limited_once_its_dollars_are_spent(
    served: Served, reachable_dir: Path
) -> None:
    remote = two_bug_remote(reachable_dir, "costly")
    with served.client(served.tenant_key("costly", "trusted")) as client:
        started = client.post("/v1/loops", json=asked(remote, "costly.yaml", budget_usd=0.5))
        loop = loop_when(client, started.json()["id"], ended)
        runs = client.get("/v1/runs").json()
    assert loop["status"] == "budget-limited", loop
    assert loop["reason"].startswith("spent $0.6")
    assert loop["reason"].endswith("of its $0.50 budget")
    assert len(loop["iterations"]) == len(runs) == 1  # no iteration starts without money
    assert runs[0]["request"]["budget_usd"] == 0.5  # the run got what the loop had
    assert loop["iterations"][0]["progress"]  # progress made: the budget stopped it


def test_a_loop_is_paused_resumed_and_stopped_through_the_api(
    served: Served, reachable_dir: Path
) -> None:
    remote = two_bug_remote(reachable_dir, "steered")
    with served.client(served.tenant_key("steered", "trusted")) as client:
        loop_id = client.post("/v1/loops", json=asked(remote, "idle.yaml")).json()["id"]
        paused = client.post(f"/v1/loops/{loop_id}/pause")
        assert paused.status_code == 200, paused.text
        assert paused.json()["status"] == "paused"
        assert client.post(f"/v1/loops/{loop_id}/pause").status_code == 409
        still = loop_when(client, loop_id, settled)
        assert still["status"] == "paused"
        time_of = len(still["iterations"])
        assert client.post(f"/v1/loops/{loop_id}/resume").json()["status"] == "active"
        loop_when(client, loop_id, lambda loop: len(loop["iterations"]) > time_of)
        stopped = client.post(f"/v1/loops/{loop_id}/stop")
        assert stopped.json()["status"] == "stopped"
        assert "stopped by key" in stopped.json()["reason"]
        final = loop_when(client, loop_id, settled)
        assert final["status"] == "stopped"
        assert client.post(f"/v1/loops/{loop_id}/stop").status_code == 409
        assert client.get("/v1/loops/loop-nothere").status_code == 404


def test_a_loop_is_its_tenants_and_its_runs_are_admitted_as_runs_are(
    served: Served, reachable_dir: Path
) -> None:
    remote = two_bug_remote(reachable_dir, "policy")
    with served.client(served.tenant_key("owner", "trusted")) as owner:
        loop_id = owner.post("/v1/loops", json=asked(remote, "idle.yaml", max_iterations=1)).json()[
            "id"
        ]
    with served.client(served.tenant_key("stranger", "trusted")) as stranger:
        assert stranger.get(f"/v1/loops/{loop_id}").status_code == 404
        assert stranger.post(f"/v1/loops/{loop_id}/stop").status_code == 404
        assert stranger.get("/v1/loops").json() == []
    # a user key names no server path
    with served.client(served.tenant_key("user", "user")) as user:
        refused = user.post("/v1/loops", json=asked(remote, "idle.yaml"))
        assert refused.status_code == 403, refused.text
        assert "server_files" in refused.json()["detail"]
        assert user.get("/v1/loops").json() == []


def test_the_goal_check_is_held_against_a_change_even_when_it_fails_on_the_base_too(
    served: Served, reachable_dir: Path
) -> None:
    """A goal that fails on the base commit the same way, and that neither the task nor the
    change names, is still the run's to meet: never set aside as the base commit's (which
    would let the run pass its verification with the goal unmet)."""
    remote = stamp_remote(reachable_dir)
    fix = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    with served.client(served.tenant_key("stamp", "trusted")) as client:
        asked_for = {
            **asked(remote, "idle.yaml", max_iterations=1), "model": fix,
            "goal": "Get it ready to ship.", "until": "python3 -m unittest test_stamp",
        }  # fmt: skip
        loop = loop_when(client, client.post("/v1/loops", json=asked_for).json()["id"], ended)
        [run] = client.get("/v1/runs").json()
    goal = [check for check in run["checks"] if check["name"] == "goal"]
    assert goal, run["checks"]
    assert not goal[-1]["passed"]
    assert not goal[-1]["preexisting"]
    assert run["status"] != "succeeded", run["checks"]
    assert loop["status"] == "stopped"
    assert "iterations are done" in loop["reason"]
