"""`golem run` on a repository with no check: a draft PR labelled unverified, exit code 5."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.blueprint.verify_repos import make_repo, scripted, write
from tests.cli.invoke import golem

pytestmark = pytest.mark.bwrap


def test_golem_run_exits_5_when_no_check_verified_the_change(
    golem_env: dict[str, str],
    reachable_dir: Path,
    tmp_path: Path,
) -> None:
    remote = make_repo(reachable_dir, "notes", {"README.md": "Notes.\n"})
    model = scripted(tmp_path, "notes", write("README.md", "Notes, more of them.\n"))
    done = golem(golem_env, "run", "--repo", str(remote), "--task", "More notes", "--model", model)
    assert done.returncode == 5, done.stderr
    assert b"unverified" in done.stdout
    [pr] = json.loads(golem(golem_env, "prs", "ls", "--json").stdout)
    assert pr["draft"]
    assert "unverified" in pr["labels"]
    [listed] = json.loads(golem(golem_env, "runs", "ls", "--json").stdout)
    assert listed["status"] == "unverified"
