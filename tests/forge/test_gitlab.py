"""GitLabForge against a GitLab REST API v4 on loopback (src/golem/testing/gitlab_server.py):
issues, merge requests, notes, labels, errors and retries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from golem.core.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeRequestRejected,
    ForgeUnavailable,
    IssueNotReadable,
    PullRequestExists,
)
from golem.forge import ForgeConfig, ForgeCredentials, PullRequestDraft, make_forge
from golem.forge.config import GitLabConfig
from golem.forge.gitlab import GitLabForge
from golem.testing.gitlab_server import GitLabServer, gitlab_error
from golem.testing.wire import Reply

TOKEN = "glpat-golemForgeTest0123456789"  # noqa: S105 (a test token)
TOKEN_ENV = "GOLEM_TEST_GITLAB_TOKEN"  # noqa: S105 (a variable's name)
PROJECT = "group/sub/demo"
ENCODED = "group%2Fsub%2Fdemo"


@pytest.fixture
def gitlab(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitLabServer]:
    """A GitLab API with PROJECT that wants TOKEN, which TOKEN_ENV holds."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitLabServer(token=TOKEN) as server:
        server.project(PROJECT)
        yield server


def make(server: GitLabServer, *, labels: tuple[str, ...] = (), **kwargs: object) -> GitLabForge:
    """A forge on ``server`` that retries twice without waiting."""
    config = GitLabConfig(base_url=server.base_url, token_env=TOKEN_ENV, max_retries=2)
    return GitLabForge(config, labels=labels, backoff=0, **kwargs)  # type: ignore[arg-type]


def draft(**overrides: object) -> PullRequestDraft:
    """A merge request for golem/fix into main of PROJECT."""
    fields: dict[str, object] = {
        "repo": PROJECT, "base": "main", "head": "golem/fix", "title": "fix: the parser",
        "body": "## Summary\n\nFixed.\n\nCloses #7\n", "issue": 7,
    }  # fmt: skip
    return PullRequestDraft.model_validate({**fields, **overrides})


@pytest.mark.parametrize("link_pages", [True, False], ids=["Link", "x-next-page"])
async def test_fetch_issue_reads_every_page_of_notes_without_system_notes(
    gitlab: GitLabServer, link_pages: bool
) -> None:
    gitlab.link_pages = link_pages
    notes = [("alice", f"note {n}") for n in range(230)]
    gitlab.add_issue(PROJECT, 7, "Parser fails", None, labels=["bug"], notes=notes)
    project = gitlab.project(PROJECT)
    project.add_note(project.issue_notes[7], "changed the description", "bob", system=True)

    issue = await make(gitlab).fetch_issue(f"{PROJECT}#7")

    assert (issue.title, issue.body, issue.labels, issue.pull_request) == (
        "Parser fails", "", ["bug"], False,
    )  # fmt: skip
    assert (issue.repo, issue.number) == (PROJECT, 7)
    assert issue.url == "https://gitlab.example.com/group/sub/demo/-/issues/7"
    assert [c.body for c in issue.comments] == [f"note {n}" for n in range(230)]
    assert issue.comments[0].author == "alice"
    assert issue.author == "alice"  # who opened it (the trust policy weighs them)
    paths = [r.path for r in gitlab.requests]
    assert paths[0] == f"/api/v4/projects/{ENCODED}/issues/7"
    assert [p.rsplit("page=", 1)[-1] for p in paths[2:]] == ["2", "3"]
    assert all("sort=asc" in p and "order_by=created_at" in p for p in paths[1:])
    for request in gitlab.requests:
        assert request.headers["private-token"] == TOKEN
        assert "authorization" not in request.headers


async def test_gitlab_refs_in_every_form(gitlab: GitLabServer) -> None:
    gitlab.add_issue(PROJECT, 7, "Parser fails")
    forge = make(gitlab)
    web = "127.0.0.1"  # the server's host: its base_url is the instance

    for ref in (f"{PROJECT}#7", f"http://{web}/{PROJECT}/-/issues/7/"):
        assert (await forge.fetch_issue(ref)).number == 7
    with pytest.raises(IssueNotReadable, match=r"GROUP/PROJECT!N"):
        await forge.fetch_issue("demo#7")
    with pytest.raises(ForgeRequestRejected, match=r"forge.gitlab.base_url to https://gl\.corp"):
        await forge.fetch_issue(f"https://gl.corp/{PROJECT}/-/issues/7")


@pytest.mark.parametrize("base_url", ["gitlab.com", "ftp://gl.corp", "https://gl.corp/api/v4"])
def test_a_base_url_that_is_no_web_address_is_refused(base_url: str) -> None:
    with pytest.raises(ValueError, match=r"web address"):
        GitLabConfig(base_url=base_url)


def test_a_gitlab_under_a_path_takes_its_web_urls() -> None:
    config = GitLabConfig(base_url="https://corp.example/gitlab/")
    forge = GitLabForge(config, token=TOKEN)

    parsed = forge._parse(f"https://corp.example/gitlab/{PROJECT}/-/merge_requests/3")

    assert (parsed.project, parsed.iid, parsed.merge_request) == (PROJECT, 3, True)
    assert forge._project(f"https://corp.example/gitlab/{PROJECT}.git") == PROJECT
    assert forge._project("gitlab/tools") == "gitlab/tools"  # a path names itself
    assert config.api_url == "https://corp.example/gitlab/api/v4"


async def test_a_merge_request_ref_reads_its_description_and_notes(gitlab: GitLabServer) -> None:
    pr = await make(gitlab).open_pull_request(draft())
    gitlab.project(PROJECT).add_discussion(pr.number, [("carol", "why this?")], individual=True)

    issue = await make(gitlab).fetch_issue(f"{PROJECT}!{pr.number}")

    assert issue.pull_request
    assert (issue.title, issue.number) == ("fix: the parser", 1)
    assert issue.body.startswith("## Summary")
    assert [(c.author, c.body) for c in issue.comments] == [("carol", "why this?")]
    assert gitlab.requests[-1].path.startswith(
        f"/api/v4/projects/{ENCODED}/merge_requests/1/notes?"
    )


async def test_open_merge_request_with_labels_in_one_request(gitlab: GitLabServer) -> None:
    gitlab.add_issue(PROJECT, 7, "Parser fails")

    pr = await make(gitlab, labels=("golem",)).open_pull_request(draft(labels=["bug", "golem"]))

    assert (pr.provider, pr.number, pr.repo, pr.issue, pr.draft) == (
        "gitlab", 1, PROJECT, 7, False,
    )  # fmt: skip
    assert pr.url == "https://gitlab.example.com/group/sub/demo/-/merge_requests/1"
    assert (pr.head, pr.base, pr.labels) == ("golem/fix", "main", ["golem", "bug"])
    (create,) = [r for r in gitlab.requests if r.method == "POST"]
    assert create.path == f"/api/v4/projects/{ENCODED}/merge_requests"
    assert create.json == {
        "source_branch": "golem/fix", "target_branch": "main", "title": "fix: the parser",
        "description": "## Summary\n\nFixed.\n\nCloses #7\n", "labels": "golem,bug",
    }  # fmt: skip


async def test_a_draft_is_titled_draft_the_gitlab_way(gitlab: GitLabServer) -> None:
    pr = await make(gitlab).open_pull_request(draft(draft=True))

    assert (pr.draft, pr.title) == (True, "fix: the parser")
    assert gitlab.merge_requests(PROJECT)[0]["title"] == "Draft: fix: the parser"
    assert gitlab.merge_requests(PROJECT)[0]["draft"] is True


async def test_an_open_merge_request_for_the_branch_is_named(gitlab: GitLabServer) -> None:
    forge = make(gitlab)
    first = await forge.open_pull_request(draft())

    with pytest.raises(PullRequestExists) as caught:
        await forge.open_pull_request(draft(title="again"))

    assert caught.value.url == first.url
    assert "already exists for this source branch: !1" in caught.value.message
    found = await forge.find_pull_request(PROJECT, "golem/fix")
    assert found is not None
    assert (found.number, found.url, found.head) == (1, first.url, "golem/fix")
    assert await forge.find_pull_request(PROJECT, "golem/other") is None


async def test_fetch_pull_request_reads_its_head_commit_and_fork(gitlab: GitLabServer) -> None:
    project = gitlab.project(PROJECT)
    project.new_mr("golem/fix", "main", "Draft: fix", sha="a" * 40)
    project.new_mr("feature", "main", "from a fork", source_project_id=99)

    forge = make(gitlab)
    ours = await forge.fetch_pull_request(PROJECT, 1)
    theirs = await forge.fetch_pull_request(PROJECT, 2)

    assert (ours.head_commit, ours.fork, ours.draft, ours.title) == ("a" * 40, False, True, "fix")
    assert theirs.fork
    with pytest.raises(ForgeNotFound, match=r"group/sub/demo!3"):
        await forge.fetch_pull_request(PROJECT, 3)


async def test_comments_go_to_issue_notes_or_merge_request_notes(gitlab: GitLabServer) -> None:
    gitlab.add_issue(PROJECT, 1, "An issue numbered like the merge request")
    forge = make(gitlab)
    pr = await forge.open_pull_request(draft())

    await forge.comment(await forge.fetch_issue(f"{PROJECT}#1"), "on the issue")
    await forge.comment(pr.as_issue(), "on the merge request")

    posts = [r.path for r in gitlab.requests if r.method == "POST"][1:]
    assert posts == [
        f"/api/v4/projects/{ENCODED}/issues/1/notes",
        f"/api/v4/projects/{ENCODED}/merge_requests/1/notes",
    ]
    assert gitlab.project(PROJECT).issue_notes[1][-1]["body"] == "on the issue"
    thread = gitlab.project(PROJECT).discussions[1]
    assert thread[-1]["notes"][0]["body"] == "on the merge request"


async def test_add_labels_keeps_the_ones_it_had(gitlab: GitLabServer) -> None:
    forge = make(gitlab)
    pr = await forge.open_pull_request(draft(labels=["bug"]))

    labels = await forge.add_labels(pr, ["needs-human", "bug"])

    assert labels == ["bug", "needs-human"]
    update = gitlab.requests[-1]
    assert (update.method, update.json) == ("PUT", {"add_labels": "needs-human,bug"})


async def test_gitlab_error_bodies_become_errors_that_say_what_to_do(
    gitlab: GitLabServer,
) -> None:
    forge = make(gitlab)
    gitlab.push(gitlab_error(403, "403 Forbidden"))
    with pytest.raises(ForgeAuthError, match=r"403 Forbidden.*scope api"):
        await forge.fetch_issue(f"{PROJECT}#1")
    with pytest.raises(ForgeNotFound, match=r"404 Project Not Found.*token's access"):
        await forge.fetch_issue("nobody/nothing#1")
    gitlab.push(gitlab_error(400, {"title": ["is too long"], "labels": ["are bad"]}))
    with pytest.raises(ForgeRequestRejected, match=r"title is too long; labels are bad"):
        await forge.open_pull_request(draft())
    gitlab.push(Reply.json({"error": "insufficient_scope", "error_description": "needs api"}, 403))
    with pytest.raises(ForgeAuthError, match=r"insufficient_scope: needs api"):
        await forge.open_pull_request(draft())


async def test_a_missing_or_wrong_token_is_named(gitlab: GitLabServer) -> None:
    config = GitLabConfig(base_url=gitlab.base_url, token_env="GOLEM_TEST_UNSET_GITLAB")  # noqa: S106
    with pytest.raises(ForgeAuthError, match=r"wants a token.*GOLEM_TEST_UNSET_GITLAB"):
        await GitLabForge(config).fetch_issue(f"{PROJECT}#1")
    wrong = ForgeCredentials(gitlab="glpat-wrong", source="tenant acme's stored token")
    with pytest.raises(ForgeAuthError, match=r"refused the token \(tenant acme's stored token\)"):
        await GitLabForge(config, credentials=wrong).fetch_issue(f"{PROJECT}#1")


async def test_5xx_and_rate_limits_are_retried_then_given_up(gitlab: GitLabServer) -> None:
    gitlab.add_issue(PROJECT, 7, "Parser fails")
    forge = make(gitlab)
    gitlab.push(gitlab_error(502, "502 Bad Gateway"))
    gitlab.push(gitlab_error(429, "Retry later", headers={"retry-after": "0"}))
    assert (await forge.fetch_issue(f"{PROJECT}#7")).title == "Parser fails"
    assert len(gitlab.requests) == 4  # two refused, then the issue and its notes

    gitlab.push(*[gitlab_error(503, "503 Service Unavailable")] * 3)
    with pytest.raises(ForgeUnavailable, match="after retries"):
        await forge.fetch_issue(f"{PROJECT}#7")
    gitlab.push(gitlab_error(429, "Retry later", headers={"retry-after": "3600"}))
    with pytest.raises(ForgeRateLimited, match="max_wait"):
        await forge.fetch_issue(f"{PROJECT}#7")


async def test_a_next_page_on_another_host_is_refused(gitlab: GitLabServer) -> None:
    gitlab.add_issue(PROJECT, 7, "Parser fails")
    forge = make(gitlab)
    gitlab.push(
        gitlab.route,
        lambda request: Reply.json(
            [], headers={"link": '<https://evil.example/api/v4/x?page=2>; rel="next"'}
        ),
    )
    with pytest.raises(ForgeError, match="does not send the token there"):
        await forge.fetch_issue(f"{PROJECT}#7")


def test_make_forge_builds_gitlab_with_the_tokens_of_the_run(gitlab: GitLabServer) -> None:
    config = ForgeConfig(provider="gitlab", gitlab=GitLabConfig(base_url=gitlab.base_url))
    tenant = ForgeCredentials(github="ghp_x", gitlab="glpat_tenant", source="tenant acme")

    forge = make_forge(None, config, credentials=tenant)

    assert isinstance(forge, GitLabForge)
    assert forge.api.has_token
    assert forge.api.token_source == "tenant acme"  # noqa: S105
    on_host = make_forge("gitlab", ForgeConfig(gitlab=GitLabConfig(token_env=TOKEN_ENV)))
    assert isinstance(on_host, GitLabForge)
    assert on_host.api.token_source == f"${TOKEN_ENV}"  # its own variable, not GitHub's


async def test_the_merge_requests_merged_last_come_newest_first_with_their_commits(
    gitlab: GitLabServer,
) -> None:
    project = gitlab.project(PROJECT)
    project.new_mr("a", "main", "first", state="merged", merged_at="2024-05-01T00:00:00Z",
                   merge_commit_sha="a" * 40, description="Fixes #3")  # fmt: skip
    project.new_mr("b", "main", "squashed", state="merged", merged_at="2024-05-03T00:00:00Z",
                   merge_commit_sha=None, squash_commit_sha="b" * 40)  # fmt: skip
    project.new_mr("c", "main", "still open", merged_at=None)
    merged = await make(gitlab).merged_pull_requests(PROJECT, 5)
    assert [(mr.number, mr.merge_commit, mr.closes) for mr in merged] == [
        (2, "b" * 40, []), (1, "a" * 40, [3])
    ]  # fmt: skip
