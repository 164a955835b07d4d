"""`golem prepare` as a user runs it: a real process makes a repository's prepared
snapshot, and making it again replaces it (one per repository and branch, never two)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.blueprint.repos import make_remote
from tests.cli.invoke import golem_in

pytestmark = pytest.mark.bwrap


def test_golem_prepare_makes_the_prepared_snapshot_and_replaces_it_when_run_again(
    tmp_path: Path, reachable_dir: Path
) -> None:
    remote = make_remote(reachable_dir)
    state = tmp_path / "state"
    made = golem_in(state, "prepare", "--repo", str(remote), "--branch", "main")
    assert made.returncode == 0, made.stderr
    first = json.loads(golem_in(state, "snapshots", "ls", "--json").stdout)
    assert [s["name"][:9] for s in first] == ["prepared-"]
    again = golem_in(state, "prepare", "--repo", str(remote))
    assert again.returncode == 0, again.stderr
    second = json.loads(golem_in(state, "snapshots", "ls", "--json").stdout)
    assert [s["name"] for s in second] == [first[0]["name"]]


def test_golem_prepare_of_a_branch_that_does_not_exist_fails_saying_so(
    tmp_path: Path, reachable_dir: Path
) -> None:
    remote = make_remote(reachable_dir)
    state = tmp_path / "state"
    done = golem_in(state, "prepare", "--repo", str(remote), "--branch", "nowhere")
    assert done.returncode == 1
    assert "nowhere" in done.stdout + done.stderr
    assert json.loads(golem_in(state, "snapshots", "ls", "--json").stdout) == []
