"""CI rounds on GitLab: the loopback GitLab's pipeline judges what golem pushed over HTTP
(read from the served bare repository), so a merge request whose pipeline fails once is
fixed in a CI round, and one that stays red is handed to a person."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.core import GolemConfig
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.git_http_server import GitHttpServer
from golem.testing.gitlab_server import GitLabServer
from tests.blueprint.ci_rounds import CI_FIX, ERROR_LINE, SCRIPTS, minion, trajectory
from tests.blueprint.gitlab_runs import (  # noqa: F401 - the loopback GitLab's fixtures
    PROJECT,
    TOKEN,
    config,
    gitlab,
    head,
    served,
)
from tests.blueprint.repos import branch_commits

pytestmark = pytest.mark.bwrap


def changelog_pipeline(remote: Path) -> Any:
    """A pipeline whose test job also wants a CHANGELOG.md in the pushed commit."""

    def jobs(project: str, sha: str) -> list[dict[str, Any]]:
        found = subprocess.run(
            ["git", "cat-file", "-e", f"{sha}:CHANGELOG.md"], cwd=remote, check=False
        )
        if found.returncode == 0:
            return [{"name": "test", "status": "success"}]
        trace = f"$ python3 -m unittest -v\nOK\n$ ./check-changelog {TOKEN}\n{ERROR_LINE}\n"
        return [{"name": "test", "status": "failed", "trace": trace}]

    return jobs


async def run(
    config: GolemConfig,  # noqa: F811 - not the fixture: the one a test got
    engine: Engine,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    served: GitHttpServer,  # noqa: F811 - fixtures, imported above
    model: str,
    blueprint: str,
) -> tuple[RunState, Path]:
    remote = served.root / "group" / "calculator.git"
    gitlab.head_sha = lambda project, branch: head(remote, branch)
    gitlab.ci = changelog_pipeline(remote)
    runner = Runner(config, engine=engine, store=MemoryStore())
    url = served.url_for("group/calculator.git")
    request = RunRequest(
        repo=url, issue=f"{PROJECT}#7", model=model, forge="gitlab", blueprint=blueprint
    )
    return await runner.start(request), remote


def mr_notes(gitlab: GitLabServer, iid: int) -> list[str]:  # noqa: F811 - fixtures, imported above
    discussions = gitlab.project(PROJECT).discussions.get(iid, [])
    return [note["body"] for discussion in discussions for note in discussion["notes"]]


async def test_a_pipeline_red_once_is_fixed_in_a_ci_round_on_the_same_branch(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    served: GitHttpServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    state, remote = await run(config, engine, gitlab, served, CI_FIX, minion(reachable_dir))
    assert state.status == "succeeded", state.error
    assert [(r.round, r.verdict) for r in state.ci] == [(0, "failed"), (1, "passed")]
    assert "Golem-CI-Round: 1" in branch_commits(remote, state.branch)[0]
    assert len(branch_commits(remote, state.branch)) == 2
    prompt = trajectory(state, "ci")
    assert ERROR_LINE in prompt
    assert TOKEN not in prompt
    assert TOKEN not in state.model_dump_json()
    [mr] = gitlab.merge_requests(PROJECT)
    assert any("after 1 CI fix round(s)" in body for body in mr_notes(gitlab, mr["iid"]))


async def test_a_pipeline_still_red_after_the_cap_labels_the_merge_request(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    served: GitHttpServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    red = f"scripted:{SCRIPTS / 'ci-red.yaml'}"
    blueprint = minion(reachable_dir, ci_rounds=2)
    state, remote = await run(config, engine, gitlab, served, red, blueprint)
    assert state.status == "escalated"
    assert [r.verdict for r in state.ci] == ["failed", "failed", "failed"]
    assert len(branch_commits(remote, state.branch)) == 3
    [mr] = gitlab.merge_requests(PROJECT)
    assert "needs-human" in mr["labels"]
    handed = mr_notes(gitlab, mr["iid"])[-1]
    assert "CI still fails" in handed
    assert "`test`" in handed
