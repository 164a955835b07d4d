"""`golem run --pr`: a follow-up run on the branch of a pull request golem opened, from
the command line, and `golem runs show` linking it to the run that opened the pull request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.blueprint.repos import EXAMPLES, git, make_remote
from tests.cli.invoke import golem

pytestmark = pytest.mark.bwrap

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
ANSWER = f"scripted:{Path(__file__).parents[1] / 'blueprint' / 'scripts' / 'follow-up.yaml'}"


def test_golem_run_pr_follows_up_the_pull_request_and_runs_show_links_the_runs(
    golem_env: dict[str, str],
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    opened = golem(golem_env, "run", "--repo", str(remote), "--task", "Fix add", "--model", FIX)
    assert opened.returncode == 0, opened.stderr
    asked = "Say that add() takes ints too."
    done = golem(
        golem_env, "run", "--repo", str(remote), "--pr", "1", "--task", asked, "--model", ANSWER
    )
    assert done.returncode == 0, done.stderr
    parent, child = reversed(json.loads(golem(golem_env, "runs", "ls", "--json").stdout))
    assert (child["blueprint"], child["request"]["follow_up"]["request"]) == ("follow-up", asked)
    assert child["request"]["follow_up"]["parent_run"] == parent["id"]  # from the PR's mark
    assert child["branch"] == parent["branch"]
    assert "ints work too" in git("show", f"{parent['branch']}:calculator.py", cwd=remote)
    wide = {**golem_env, "COLUMNS": "250"}
    shown = golem(wide, "runs", "show", child["id"]).stdout.decode()
    assert f"follow-up of {parent['id']} on {parent['pr']['url']}" in shown
    shown = golem(wide, "runs", "show", parent["id"]).stdout.decode()
    assert f"follow-up: {child['id']} · succeeded" in shown


def test_golem_run_pr_refuses_an_issue_too(golem_env: dict[str, str]) -> None:
    done = golem(golem_env, "run", "--repo", ".", "--pr", "1", "--issue", "x.md")
    assert done.returncode != 0
    assert b"--pr follows up a pull request: give --task, not --issue" in done.stderr
