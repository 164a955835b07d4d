"""Values in forge API paths: a branch, a login or any other value golem puts into a
GitHub or GitLab request path never leads the request elsewhere than its route.

A base branch's name follows git's rules only (``#``, ``%`` and ``?`` are allowed), a
login comes from a delivery: each is percent-encoded as one segment, and the API clients
refuse any path that still holds a ``.``/``..`` segment, a query, a fragment, a space or a
control character, before a request is sent.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from golem.core.errors import ForgeRequestRejected
from golem.forge.config import GitLabConfig
from golem.forge.github_api import GitHubAPI
from golem.forge.gitlab_api import GitLabAPI
from golem.forge.rest import checked_path, segment
from golem.testing.github_server import GitHubServer
from golem.testing.gitlab_server import GitLabServer
from tests.forge.github_kit import REPO, TOKEN, TOKEN_ENV, make

SHA = "a" * 40
HOSTILE_PATHS = [
    "/repos/octo/demo/branches/../../../user",
    "/repos/octo/demo/branches/%2e%2e/%2E%2E/admin",
    "/repos/octo/demo/branches/x?per_page=1",
    "/repos/octo/demo/branches/x#frag",
    "/repos/octo/demo/branches/x y",
    "/repos/octo/demo/branches/x\ny",
    "/repos/octo/demo/branches/x%0ay",
    "/repos/octo/demo/branches/x\\..\\..",
    "/repos/octo/demo/branches/\u00e9",
]


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitHubServer(token=TOKEN) as server:
        yield server


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_a_path_that_could_lead_elsewhere_is_refused(path: str) -> None:
    with pytest.raises(ForgeRequestRejected, match="not a plain name"):
        checked_path(path, "GitHub")


@pytest.mark.parametrize("value", ["weird#name", "100%", "what?", "caf\u00e9", "%2e%2e", "a;b"])
def test_a_legal_name_as_a_segment_passes_the_guard_as_one_segment(value: str) -> None:
    path = f"/repos/octo/demo/collaborators/{segment(value)}/permission"
    assert checked_path(path, "GitHub") == path
    assert len(path.split("/")) == 7


@pytest.mark.parametrize("value", ["..", "../..", "a/../b", "a\nb", "a\x7fb", "x\\..\\.."])
def test_a_name_that_could_lead_elsewhere_is_refused_even_encoded(value: str) -> None:
    with pytest.raises(ForgeRequestRejected):
        checked_path(f"/repos/octo/demo/collaborators/{segment(value)}/permission", "GitHub")


@pytest.mark.parametrize("branch", ["weird#name", "100%", "what?", "feature/x"])
async def test_a_base_branch_of_any_legal_name_asks_github_for_that_branch_only(
    github: GitHubServer, branch: str
) -> None:
    github.protect(REPO, branch, ["test"])
    forge = make(github)

    status = await forge.ci_status(REPO, SHA, base=branch)

    asked = [r.path for r in github.requests if "/branches/" in r.path]
    assert asked, "the branch's protection was asked for"
    assert all(path.split("?")[0].endswith(segment(branch, slashes=True)) for path in asked)
    assert status.required == ["test"]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
async def test_the_github_client_sends_nothing_for_a_hostile_path(
    github: GitHubServer, path: str
) -> None:
    api = GitHubAPI(make(github).api.config, token=TOKEN)
    with pytest.raises(ForgeRequestRejected):
        await api.call("GET", path, "a branch")
    assert github.requests == []


@pytest.mark.parametrize("path", HOSTILE_PATHS)
async def test_the_gitlab_client_sends_nothing_for_a_hostile_path(path: str) -> None:
    with GitLabServer() as server:
        api = GitLabAPI(GitLabConfig(base_url=server.base_url))
        with pytest.raises(ForgeRequestRejected):
            await api.call("GET", path.replace("/repos/octo/demo", "/projects/1"), "a branch")
        assert server.requests == []
