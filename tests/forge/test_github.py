"""GitHubForge against a GitHub REST API on loopback (src/golem/testing/github_server.py)."""

from __future__ import annotations

import logging
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
from golem.forge import Issue, PullRequestDraft
from golem.forge.config import GitHubConfig
from golem.forge.github import GitHubForge
from golem.testing.github_server import (
    GitHubServer,
    github_error,
    rate_limited,
    secondary_rate_limited,
)
from golem.testing.wire import Reply
from tests.forge.github_kit import REPO, TOKEN, TOKEN_ENV, make


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    """A GitHub API that wants TOKEN, which TOKEN_ENV holds."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitHubServer(token=TOKEN) as server:
        yield server


def draft(**overrides: object) -> PullRequestDraft:
    """A pull request for golem/fix into main of REPO."""
    fields: dict[str, object] = {
        "repo": REPO, "base": "main", "head": "golem/fix", "title": "fix: the parser",
        "body": "## Summary\n\nFixed.\n\nCloses #7\n", "issue": 7,
    }  # fmt: skip
    return PullRequestDraft.model_validate({**fields, **overrides})


async def test_fetch_issue_reads_every_page_of_comments(github: GitHubServer) -> None:
    comments = [("alice", f"comment {n}") for n in range(230)]
    github.add_issue(REPO, 7, "Parser fails", None, labels=["bug"], comments=comments)

    issue = await make(github).fetch_issue("https://github.com/octo/demo/issues/7")

    assert (issue.title, issue.body, issue.labels) == ("Parser fails", "", ["bug"])
    assert (issue.repo, issue.number, issue.url) == (
        REPO,
        7,
        "https://github.com/octo/demo/issues/7",
    )
    assert [c.body for c in issue.comments] == [f"comment {n}" for n in range(230)]
    assert issue.comments[0].author == "alice"
    assert issue.author == "octocat"  # who opened it (the trust policy weighs them)
    assert issue.comments[0].created == "2024-05-01T12:00:00Z"
    paths = [r.path for r in github.requests]
    assert paths == [
        "/repos/octo/demo/issues/7",
        "/repos/octo/demo/issues/7/comments?per_page=100",
        "/repos/octo/demo/issues/7/comments?per_page=100&page=2",
        "/repos/octo/demo/issues/7/comments?per_page=100&page=3",
    ]
    for request in github.requests:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers["x-github-api-version"] == "2022-11-28"


async def test_issue_refs_in_every_form(github: GitHubServer) -> None:
    github.add_issue(REPO, 7, "Parser fails")
    forge = make(github)

    for ref in (
        "octo/demo#7",
        "https://github.com/octo/demo/issues/7/",
        "https://github.com/octo/demo/pull/7",
    ):
        assert (await forge.fetch_issue(ref)).number == 7
    with pytest.raises(IssueNotReadable, match="OWNER/REPO#N"):
        await forge.fetch_issue("octo/demo/7")


async def test_an_enterprise_url_needs_the_enterprise_api() -> None:
    forge = GitHubForge(GitHubConfig(token_env=TOKEN_ENV))

    with pytest.raises(ForgeRequestRejected, match=r"https://ghe\.example\.com/api/v3"):
        await forge.fetch_issue("https://ghe.example.com/octo/demo/issues/7")


async def test_open_pull_request_with_labels(github: GitHubServer) -> None:
    github.add_issue(REPO, 7, "Parser fails")

    pr = await make(github, labels=("golem",)).open_pull_request(draft(labels=["bug"]))

    assert (pr.provider, pr.number, pr.repo, pr.issue) == ("github", 8, REPO, 7)
    assert pr.url == "https://github.com/octo/demo/pull/8"
    assert (pr.head, pr.base, pr.draft, pr.labels) == ("golem/fix", "main", False, ["golem", "bug"])
    create = next(r for r in github.requests if r.path == "/repos/octo/demo/pulls")
    assert create.method == "POST"
    assert create.json == {
        "title": "fix: the parser", "head": "golem/fix", "base": "main",
        "body": "## Summary\n\nFixed.\n\nCloses #7\n", "draft": False,
    }  # fmt: skip
    assert github.labels(REPO, 8) == ["golem", "bug"]
    assert github.pulls(REPO)[0]["body"].endswith("Closes #7\n")


async def test_an_escalation_opens_a_draft_marked_for_a_human(github: GitHubServer) -> None:
    pr = await make(github).open_pull_request(draft(draft=True, labels=["needs-human"]))

    assert pr.draft
    assert github.pulls(REPO)[0]["draft"] is True
    assert github.labels(REPO, pr.number) == ["needs-human"]


async def test_without_draft_support_the_labels_mark_it(
    github: GitHubServer, caplog: pytest.LogCaptureFixture
) -> None:
    github.drafts = False

    pr = await make(github).open_pull_request(draft(draft=True, labels=["needs-human"]))

    assert not pr.draft
    assert pr.labels == ["needs-human"]
    assert "not available" in caplog.text


async def test_a_second_pull_request_for_the_branch_names_the_first(github: GitHubServer) -> None:
    forge = make(github)
    first = await forge.open_pull_request(draft())

    with pytest.raises(PullRequestExists, match="already open") as caught:
        await forge.open_pull_request(draft(title="again"))

    assert caught.value.url == first.url
    assert first.url in str(caught.value)
    assert "A pull request already exists for octo:golem/fix." in str(caught.value)


async def test_no_commits_between_the_branches_says_to_push(github: GitHubServer) -> None:
    error = {"resource": "PullRequest", "code": "custom",
             "message": "No commits between main and golem/fix"}  # fmt: skip
    github.push(github_error(422, "Validation Failed", errors=[error]))

    with pytest.raises(ForgeRequestRejected, match="push the branch"):
        await make(github).open_pull_request(draft())


async def test_labels_that_fail_do_not_lose_the_pull_request(
    github: GitHubServer, caplog: pytest.LogCaptureFixture
) -> None:
    github.push(github.route, github_error(403, "Resource not accessible by integration"))

    pr = await make(github).open_pull_request(draft(labels=["needs-human"]))

    assert pr.number == 1
    assert pr.labels == []
    assert "labels were not added" in caplog.text


async def test_comment_on_an_issue_and_on_a_pull_request(github: GitHubServer) -> None:
    github.add_issue(REPO, 7, "Parser fails")
    forge = make(github)
    issue = await forge.fetch_issue("octo/demo#7")
    pr = await forge.open_pull_request(draft())

    await forge.comment(issue, "golem opened a pull request")
    await forge.comment(pr.as_issue(), "checks: all green")

    assert [c["body"] for c in github.comments(REPO, 7)] == ["golem opened a pull request"]
    assert [c["body"] for c in github.comments(REPO, pr.number)] == ["checks: all green"]
    with pytest.raises(ForgeRequestRejected, match="no repository and number"):
        await forge.comment(Issue(title="from a file", url="file:///tmp/issue.md"), "x")


async def test_a_refused_token_is_an_auth_error_naming_its_variable(github: GitHubServer) -> None:
    forge = GitHubForge(
        GitHubConfig(api_url=github.api_url, token_env=TOKEN_ENV),
        token="ghp_wrong",  # noqa: S106 (a wrong test token)
        backoff=0,
    )

    with pytest.raises(
        ForgeAuthError, match=rf"refused the token \(\${TOKEN_ENV}\).*Bad credentials"
    ):
        await forge.fetch_issue("octo/demo#7")
    assert len(github.requests) == 1


async def test_no_token_says_which_variable_to_set(
    github: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV)

    with pytest.raises(ForgeAuthError, match=rf"wants a token .* set \${TOKEN_ENV}"):
        await make(github).open_pull_request(draft())
    assert "authorization" not in github.requests[0].headers


async def test_a_missing_issue_is_not_found(github: GitHubServer) -> None:
    with pytest.raises(ForgeNotFound, match=r"no issue octo/demo#9 .*Not Found"):
        await make(github).fetch_issue("octo/demo#9")


async def test_a_missing_permission_is_an_auth_error(github: GitHubServer) -> None:
    github.push(github_error(403, "Resource not accessible by personal access token"))

    with pytest.raises(ForgeAuthError, match="lacks a permission"):
        await make(github).open_pull_request(draft())


async def test_the_rate_limit_is_not_waited_out_for_an_hour(github: GitHubServer) -> None:
    github.push(rate_limited(reset_in=3600))

    with pytest.raises(ForgeRateLimited, match=r"rate limit .* until \d\d:\d\d:\d\d UTC"):
        await make(github).fetch_issue("octo/demo#7")
    assert len(github.requests) == 1


@pytest.mark.parametrize("status", [403, 429])
async def test_a_secondary_rate_limit_is_retried_after_its_wait(
    github: GitHubServer, status: int
) -> None:
    github.add_issue(REPO, 7, "Parser fails")
    github.push(secondary_rate_limited(retry_after=0, status=status))

    issue = await make(github).fetch_issue("octo/demo#7")

    assert issue.title == "Parser fails"
    assert [r.path for r in github.requests][:2] == ["/repos/octo/demo/issues/7"] * 2


async def test_a_bad_gateway_is_retried(github: GitHubServer) -> None:
    github.push(github_error(502, "Server Error"), github_error(503, "Unavailable"))

    pr = await make(github).open_pull_request(draft())

    assert pr.number == 1
    assert len(github.pulls(REPO)) == 1


async def test_a_gateway_that_stays_bad_is_unavailable(github: GitHubServer) -> None:
    github.push(*[github_error(502, "Server Error")] * 3)

    with pytest.raises(ForgeUnavailable, match="after retries"):
        await make(github).fetch_issue("octo/demo#7")
    assert len(github.requests) == 3


async def test_an_unreachable_api_is_unavailable() -> None:
    with GitHubServer() as gone:
        forge = make(gone)

    with pytest.raises(ForgeUnavailable, match="cannot reach GitHub"):
        await forge.fetch_issue("octo/demo#7")


async def test_a_next_page_on_another_host_is_refused(github: GitHubServer) -> None:
    github.add_issue(REPO, 7, "Parser fails")
    elsewhere = '<https://elsewhere.example/repos/octo/demo/issues/7/comments?page=2>; rel="next"'
    github.push(github.route, Reply.json([], headers={"link": elsewhere}))

    with pytest.raises(ForgeError, match="does not send the token there"):
        await make(github).fetch_issue("octo/demo#7")


async def test_the_token_appears_in_no_log_or_error(
    github: GitHubServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    forge = make(github)
    github.add_issue(REPO, 7, "Parser fails", comments=["one"])
    github.push(
        github_error(502, "Server Error"),
        secondary_rate_limited(),
        github.route,
        github.route,
        github_error(403, "Resource not accessible by integration"),
    )
    errors: list[ForgeError] = []
    await forge.fetch_issue("octo/demo#7")
    for call in (
        forge.open_pull_request(draft()),
        forge.fetch_issue("octo/demo#404"),
        forge.open_pull_request(draft()),
        forge.open_pull_request(draft()),
    ):
        try:
            await call
        except ForgeError as exc:
            errors.append(exc)

    assert [type(e) for e in errors] == [ForgeAuthError, ForgeNotFound, PullRequestExists]
    assert caplog.text
    for text in [caplog.text, *(str(e) for e in errors), *(repr(e) for e in errors)]:
        assert TOKEN not in text
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in github.requests)


async def test_the_pull_requests_merged_last_come_newest_first_with_the_issues_they_close(
    github: GitHubServer,
) -> None:
    for number in range(1, 131):  # more than a page of closed pull requests
        when = f"2024-05-01T{number // 60:02d}:{number % 60:02d}:00Z"
        github.add_closed_pull(REPO, number, f"fix {number}", f"Fixes #{number + 1000}",
                               merge_commit=f"{number:040x}", closed_at=when)  # fmt: skip
    github.add_closed_pull(REPO, 131, "the last", "Closes #7, and fixes #8.\nResolved: #9",
                           merge_commit="f" * 40, closed_at="2024-06-01T00:00:00Z")  # fmt: skip
    github.add_closed_pull(REPO, 132, "closed, never merged", "", closed_at="2024-07-01T00:00:00Z")
    merged = await make(github).merged_pull_requests(REPO, 3)
    assert [pr.number for pr in merged] == [131, 130, 129]
    assert merged[1].closes == [1130]
    assert merged[0].closes == [7, 8, 9]
    assert merged[0].merge_commit == "f" * 40
    assert merged[0].url == f"https://github.com/{REPO}/pull/131"
    assert len(await make(github).merged_pull_requests(REPO, 200)) == 131
