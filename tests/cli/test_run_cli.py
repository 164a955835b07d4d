"""`golem run`, `golem runs` and `golem prs` as a user runs them: real processes, real
boxes, a bare git repository as the remote, a scripted model, the local forge."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.blueprint.repos import EXAMPLES, branch_commits, git, make_remote
from tests.cli.invoke import golem

pytestmark = pytest.mark.bwrap

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
SLOW = f"scripted:{Path(__file__).parents[1] / 'blueprint' / 'scripts' / 'slow.yaml'}"
TASK = "Fix the failing tests of the calculator"


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


def start_run(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """`golem run` in the background, in a process group of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "golem", "run", *args],
        env={**env, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def read_until(process: subprocess.Popen[bytes], marker: str) -> str:
    """The run's progress (stderr) up to and including the first line with ``marker``."""
    assert process.stderr is not None
    seen = ""
    while marker not in seen:
        ready, _, _ = select.select([process.stderr], [], [], 120)
        assert ready, f"no {marker!r} in: {seen}"
        line = process.stderr.readline().decode()
        assert line, f"the run ended before {marker!r}: {seen}"
        seen += line
    return seen


def run_id_in(progress: str) -> str:
    return next(word for word in progress.split() if word.startswith("run-"))


def test_golem_run_opens_a_pr_that_prs_ls_and_show_list(
    golem_env: dict[str, str],
    remote: Path,
) -> None:
    done = golem(golem_env, "run", "--repo", str(remote), "--task", TASK, "--model", FIX)
    assert done.returncode == 0, done.stderr
    assert b"succeeded" in done.stdout
    progress = done.stderr.decode()  # the test check's own lines, shown as it ran
    assert "│ test_add (test_calculator." in progress
    assert progress.index("│ OK") < progress.index("✓ test python3 -m unittest -v")
    assert b"PR: golem://local/" in done.stdout
    listed = json.loads(golem(golem_env, "prs", "ls", "--json").stdout)
    assert [(p["number"], p["repo"]) for p in listed] == [(1, str(remote))]
    shown = golem(golem_env, "prs", "show", "1").stdout.decode()
    assert "+    return a + b" in shown
    assert "| test | `python3 -m unittest -v` | passed |" in shown
    runs = json.loads(golem(golem_env, "runs", "ls", "--json").stdout)
    assert [r["status"] for r in runs] == ["succeeded"]


def test_golem_runs_cancel_stops_a_running_run_and_leaves_no_box(
    golem_env: dict[str, str],
    remote: Path,
) -> None:
    with start_run(golem_env, "--repo", str(remote), "--task", TASK, "--model", SLOW) as process:
        run_id = run_id_in(read_until(process, "▸ implement"))
        cancelled = golem(golem_env, "runs", "cancel", run_id)
        assert cancelled.returncode == 0, cancelled.stderr
        assert process.wait(timeout=60) == 4
    state = json.loads(golem(golem_env, "runs", "show", run_id, "--json").stdout)
    assert (state["status"], state["current"]) == ("cancelled", "implement")
    assert json.loads(golem(golem_env, "sessions", "ls", "--json").stdout) == []


def test_a_killed_run_resumes_and_commits_once(
    golem_env: dict[str, str],
    remote: Path,
    reachable_dir: Path,
) -> None:
    """The runner is SIGKILLed while the repo's check runs (after the agent's change was
    saved); `golem runs resume` prunes its box and finishes: one commit, one PR."""
    work = reachable_dir / "slow-check"
    git("clone", "-q", str(remote), str(work), cwd=reachable_dir)
    (work / ".golem.toml").write_text(
        "[commands]\ntest = '[ -z \"$SLOW_CHECK\" ] || sleep 600; python3 -m unittest -v'\n"
    )
    git("commit", "-qam", "a check that can be slow", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    slow_env = {**golem_env, "GOLEM_ENGINE__DEFAULTS__ENV": '{"SLOW_CHECK": "1"}'}
    with start_run(slow_env, "--repo", str(remote), "--task", TASK, "--model", FIX) as process:
        run_id = run_id_in(read_until(process, "▸ verify"))
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    left = json.loads(golem(golem_env, "runs", "show", run_id, "--json").stdout)
    assert (left["status"], left["current"]) == ("running", "verify")
    resumed = golem(golem_env, "runs", "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert b"(resumed)" in resumed.stderr
    state = json.loads(golem(golem_env, "runs", "show", run_id, "--json").stdout)
    assert state["status"] == "succeeded"
    [commit] = branch_commits(remote, state["branch"])
    assert f"Golem-Run: {run_id}" in commit
    assert len(json.loads(golem(golem_env, "prs", "ls", "--json").stdout)) == 1
    assert json.loads(golem(golem_env, "sessions", "ls", "--json").stdout) == []


def test_resuming_a_run_whose_runner_lives_is_refused(
    golem_env: dict[str, str],
    remote: Path,
) -> None:
    with start_run(golem_env, "--repo", str(remote), "--task", TASK, "--model", SLOW) as process:
        run_id = run_id_in(read_until(process, "▸ implement"))
        try:
            refused = golem(golem_env, "runs", "resume", run_id)
            assert refused.returncode == 2
            assert b"is being run by process" in refused.stderr
        finally:
            golem(golem_env, "runs", "cancel", run_id)
            process.wait(timeout=60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--repo", "x"], b"give exactly one of --task or --issue"),
        (["run", "--repo", "x", "--task", "t", "--issue", "i"], b"exactly one of"),
        (["run", "--repo", "x", "--task", "t", "--forge", "gitea"], b"--forge"),
        (["run", "--repo", "x", "--task", "t", "--blueprint", "nope"], b"no blueprint 'nope'"),
        (["run", "--repo", "x", "--task", "t", "--attempts", "9"], b"at most 4 ([engine] max"),
        (["run", "--repo", "x", "--task", "t", "--attempts", "0"], b"--attempts: Input should"),
        (["runs", "show", "run-nope"], b"no run 'run-nope'"),
        (["runs", "approve", "run-nope"], b"no run 'run-nope'"),
        (["prs", "show", "9"], b"no pull request #9"),
        (["blueprint", "validate", "/no/such.yaml"], b"no blueprint"),
    ],
)
def test_bad_run_input_is_one_line_exit_2(
    golem_env: dict[str, str],
    args: list[str],
    message: bytes,
) -> None:
    done = golem(golem_env, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert b"Traceback" not in done.stderr


def test_blueprint_show_and_validate(
    golem_env: dict[str, str],
    tmp_path: Path,
) -> None:
    shown = golem(golem_env, "blueprint", "show").stdout.decode()
    assert "verify     loop: lint, build, test" in shown
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nnodes:\n  - id: a\n    kind: host\n    action: fly\n")
    done = golem(golem_env, "blueprint", "validate", str(bad))
    assert done.returncode == 2
    assert f"{bad}:5: nodes.0.action".encode() in done.stderr
