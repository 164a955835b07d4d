"""Runs against the loopback GitLab: its server, project, token and configuration (fixtures)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core import GolemConfig, load_config
from golem.testing.git_http_server import GitHttpServer
from golem.testing.gitlab_server import GitLabServer
from tests.blueprint.repos import git, make_remote

TOKEN = "glpat-golemRunTest0123456789"  # noqa: S105 - a test token

PROJECT = "group/calculator"


def head(remote: Path, branch: str) -> str | None:
    """The commit ``branch`` points to in the bare ``remote`` (None: no such branch)."""
    argv = ["git", "rev-parse", "--verify", "-q", branch]
    done = subprocess.run(argv, cwd=remote, capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


@pytest.fixture
def gitlab(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitLabServer]:
    monkeypatch.setenv("GOLEM_TEST_GITLAB_TOKEN", TOKEN)
    with GitLabServer(token=TOKEN) as server:
        server.add_issue(
            PROJECT, 7, "add() subtracts its arguments",
            "`add(2, 3)` gives -1. See calculator.py.",
            notes=["test_calculator.py shows it too"],
        )  # fmt: skip
        server.ci = lambda project, sha: [{"name": "test", "status": "success"}]  # CI is green
        yield server


def served_calculator(reachable_dir: Path) -> Path:
    """The bare group/calculator.git that ``git_over_http`` serves, taking pushes."""
    (reachable_dir / "served" / "group").mkdir(parents=True)
    remote = make_remote(reachable_dir / "served" / "group")
    git("config", "http.receivepack", "true", cwd=remote)
    return remote


def git_over_http(reachable_dir: Path) -> GitHttpServer:
    """The repositories under ``reachable_dir/served`` over smart HTTP, wanting oauth2:TOKEN."""
    return GitHttpServer(reachable_dir / "served", TOKEN, username="oauth2")


@pytest.fixture
def served(reachable_dir: Path) -> Iterator[GitHttpServer]:
    """group/calculator.git over smart HTTP, wanting oauth2:TOKEN."""
    served_calculator(reachable_dir)
    with git_over_http(reachable_dir) as server:
        yield server


@pytest.fixture
def config(config: GolemConfig, gitlab: GitLabServer, served: GitHttpServer) -> GolemConfig:
    data = config.model_dump(mode="json")
    data["forge"] = {
        "provider": "gitlab",
        "gitlab": {
            "base_url": gitlab.base_url,
            "token_env": "GOLEM_TEST_GITLAB_TOKEN",
            "token_for_git": True,
        },
    }
    return load_config(data, files=[])
