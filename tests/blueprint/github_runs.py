"""Runs against the loopback GitHub: its server, repository, token and configuration
(fixtures)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from golem.core import GolemConfig, load_config
from golem.testing.github_server import GitHubServer

TOKEN = "ghp_golemtest0123456789abcdef"  # noqa: S105 - a test token

REPO = "octo/calculator"


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    monkeypatch.setenv("GOLEM_TEST_GITHUB_TOKEN", TOKEN)
    with GitHubServer(token=TOKEN) as server:
        server.add_issue(
            REPO, 7, "add() subtracts its arguments",
            body="`add(2, 3)` gives -1. See calculator.py.",
            comments=["test_calculator.py shows it too"],
        )  # fmt: skip
        server.ci = lambda repo, sha: [{"name": "test", "conclusion": "success"}]  # CI is green
        yield server


@pytest.fixture
def config(config: GolemConfig, github: GitHubServer) -> GolemConfig:
    data = config.model_dump(mode="json")
    data["forge"] = {
        "provider": "github",
        "github": {"api_url": github.api_url, "token_env": "GOLEM_TEST_GITHUB_TOKEN"},
    }
    return load_config(data, files=[])
