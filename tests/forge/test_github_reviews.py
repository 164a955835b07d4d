"""GitHubForge's review calls against the loopback GitHub: a pull request by number, its
review discussion (threads, resolved and outdated), replies, review requests, and who
may ask golem for a follow-up."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from golem.core.errors import ForgeAuthError, ForgeError, ForgeNotFound, ForgeRequestRejected
from golem.forge.config import GitHubConfig
from golem.forge.github import GitHubForge
from golem.testing.github_server import GitHubServer, Reply, github_error
from tests.forge.github_kit import REPO, TOKEN, TOKEN_ENV, make


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    """A GitHub API that wants TOKEN, which TOKEN_ENV holds."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with GitHubServer(token=TOKEN) as server:
        yield server


async def test_fetch_pull_request_reads_its_head_commit_and_whether_it_is_from_a_fork(
    github: GitHubServer,
) -> None:
    own = github.add_pull(REPO, "golem/fix", title="fix: parser", body="Closes #7")
    forked = github.add_pull(REPO, "patch-1", fork="someone/demo", author="someone")
    github.head_sha = lambda repo, branch: "c" * 40 if branch == "golem/fix" else None
    forge = make(github)

    pr = await forge.fetch_pull_request(REPO, own["number"])
    other = await forge.fetch_pull_request(REPO, forked["number"])

    assert (pr.number, pr.head, pr.base, pr.title, pr.body) == (
        own["number"], "golem/fix", "main", "fix: parser", "Closes #7",
    )  # fmt: skip
    assert (pr.head_commit, pr.fork) == ("c" * 40, False)
    assert (other.head, other.fork) == ("patch-1", True)


async def test_fetch_pull_request_that_does_not_exist_is_not_found(github: GitHubServer) -> None:
    with pytest.raises(ForgeNotFound, match="pull request octo/demo#41"):
        await make(github).fetch_pull_request(REPO, 41)


async def test_review_discussion_groups_comments_into_threads_marking_resolved_and_outdated(
    github: GitHubServer,
) -> None:
    number = github.add_pull(REPO, "golem/fix")["number"]
    first = github.add_review_comment(
        REPO, number, "Rename add to plus", author="alice", path="calc.py", line=3
    )
    stale = github.add_review_comment(
        REPO, number, "Typo here", author="bob", path="README.md", line=None
    )
    whole = github.add_review_comment(REPO, number, "Split this file", path="big.py", on_file=True)
    github.add_review_comment(REPO, number, "Agreed", author="bob", reply_to=first["id"])
    github.add_review_comment(REPO, number, "Fixed", author="carol", reply_to=stale["id"])
    github.resolve(REPO, stale["id"])
    github.add_review(REPO, number, "alice", "CHANGES_REQUESTED", "See my notes")
    github.add_review(REPO, number, "bob", "PENDING", "not sent yet")
    github.add_review(REPO, number, "dave", "APPROVED")
    github.add_comment(REPO, number, "@golem also update the docs", author="erin")
    forge = make(github)

    discussion = await forge.review_discussion(await forge.fetch_pull_request(REPO, number))

    threads = {t.id: t for t in discussion.threads}
    assert list(threads) == [str(first["id"]), str(stale["id"]), str(whole["id"])]
    live, old = threads[str(first["id"])], threads[str(stale["id"])]
    on_file = threads[str(whole["id"])]
    assert (on_file.path, on_file.line, on_file.outdated) == ("big.py", None, False)
    assert [(n.author, n.body) for n in live.comments] == [
        ("alice", "Rename add to plus"),
        ("bob", "Agreed"),
    ]
    assert (live.path, live.line, live.resolved, live.outdated) == ("calc.py", 3, False, False)
    assert (old.path, old.resolved, old.outdated) == ("README.md", True, True)
    assert [n.body for n in old.comments] == ["Typo here", "Fixed"]
    assert [(r.author, r.state, r.body) for r in discussion.reviews] == [
        ("alice", "changes_requested", "See my notes"),
        ("dave", "approved", ""),
    ]
    assert [(c.author, c.body) for c in discussion.comments] == [
        ("erin", "@golem also update the docs")
    ]
    assert discussion.reviewers() == ["alice", "dave", "bob", "carol", "octocat"]


async def test_review_discussion_reads_every_page_of_threads(github: GitHubServer) -> None:
    number = github.add_pull(REPO, "golem/fix")["number"]
    roots = [github.add_review_comment(REPO, number, f"note {n}") for n in range(130)]
    github.resolve(REPO, roots[120]["id"])
    forge = make(github)

    discussion = await forge.review_discussion(await forge.fetch_pull_request(REPO, number))

    assert len(discussion.threads) == 130
    assert [t.id for t in discussion.threads if t.resolved] == [str(roots[120]["id"])]
    assert sum(r.path == "/graphql" for r in github.requests) == 2


async def test_review_discussion_without_graphql_leaves_threads_open_and_warns(
    github: GitHubServer, caplog: pytest.LogCaptureFixture
) -> None:
    number = github.add_pull(REPO, "golem/fix")["number"]
    root = github.add_review_comment(REPO, number, "Rename it", line=3)
    github.resolve(REPO, root["id"])
    forge = make(github)
    pr = await forge.fetch_pull_request(REPO, number)
    github.push(github.route, github.route, github.route, github_error(403, "Forbidden"))

    with caplog.at_level(logging.WARNING, logger="golem.forge.github_reviews"):
        discussion = await forge.review_discussion(pr)

    assert [(t.id, t.resolved) for t in discussion.threads] == [(str(root["id"]), False)]
    assert "which review threads are resolved is unknown" in caplog.text


def test_graphql_lives_beside_the_rest_api_on_github_and_on_enterprise_servers() -> None:
    def graphql(api_url: str) -> str:
        return GitHubForge(GitHubConfig(api_url=api_url), token=TOKEN).api.graphql_url

    assert graphql("https://api.github.com") == "https://api.github.com/graphql"
    assert graphql("https://ghe.example/api/v3") == "https://ghe.example/api/graphql"
    assert graphql("https://ghe.example/api/v3/") == "https://ghe.example/api/graphql"


async def test_reply_goes_to_the_threads_replies_or_to_the_conversation(
    github: GitHubServer,
) -> None:
    number = github.add_pull(REPO, "golem/fix")["number"]
    root = github.add_review_comment(REPO, number, "Rename it", author="alice", line=3)
    forge = make(github)
    pr = await forge.fetch_pull_request(REPO, number)

    await forge.reply(pr, str(root["id"]), "Renamed in 1a2b3c.")
    await forge.reply(pr, None, "Pushed the fixes.")

    answer = github.review_comments(REPO, number)[-1]
    assert (answer["in_reply_to_id"], answer["body"]) == (root["id"], "Renamed in 1a2b3c.")
    assert answer["user"]["login"] == "golem-bot"
    assert github.comments(REPO, number)[-1]["body"] == "Pushed the fixes."
    posted = [r.path for r in github.requests if r.method == "POST"]
    assert posted == [
        f"/repos/octo/demo/pulls/{number}/comments/{root['id']}/replies",
        f"/repos/octo/demo/issues/{number}/comments",
    ]
    with pytest.raises(ForgeRequestRejected, match="not a GitHub review thread"):
        await forge.reply(pr, "discussion-abc", "hello")


async def test_request_review_leaves_out_the_author_and_a_refusal_is_only_a_warning(
    github: GitHubServer, caplog: pytest.LogCaptureFixture
) -> None:
    number = github.add_pull(REPO, "golem/fix")["number"]
    forge = make(github)
    pr = await forge.fetch_pull_request(REPO, number)

    await forge.request_review(pr, ["alice", "golem-bot", "bob", "alice"])
    github.login = "someone-else"  # golem's account unknown: GitHub refuses the author itself
    github.push(
        github.route, github_error(422, "Review cannot be requested from pull request author.")
    )
    with caplog.at_level(logging.WARNING, logger="golem.forge.github_reviews"):
        await forge.request_review(pr, ["carol"])

    assert github.requested_reviewers(REPO, number) == ["alice", "bob"]
    assert "review not requested again from carol" in caplog.text


@pytest.mark.parametrize(
    ("role", "expected"),
    [("admin", "admin"), ("maintain", "write"), ("write", "write"), ("triage", "read"),
     ("read", "read")],
)  # fmt: skip
async def test_permission_maps_githubs_roles(
    github: GitHubServer, role: str, expected: str
) -> None:
    github.set_permission(REPO, "alice", role)

    assert await make(github).permission(REPO, "alice") == expected


async def test_permission_of_someone_github_does_not_know_there_is_none(
    github: GitHubServer,
) -> None:
    assert await make(github).permission(REPO, "stranger") == "none"


async def test_permission_on_an_older_server_without_role_names_reads_permission(
    github: GitHubServer,
) -> None:
    github.push(Reply.json({"permission": "write", "user": {"login": "alice"}}))

    assert await make(github).permission(REPO, "alice") == "write"


@pytest.mark.parametrize(
    "failure",
    [github_error(403, "Resource not accessible by integration"), github_error(500, "boom")],
)
async def test_permission_that_cannot_be_read_is_an_error_never_write(
    github: GitHubServer, failure: Reply
) -> None:
    github.push(failure, failure, failure)

    with pytest.raises(ForgeError) as raised:
        await make(github).permission(REPO, "alice")

    assert not isinstance(raised.value, ForgeNotFound)
    if "403" in str(raised.value):
        assert isinstance(raised.value, ForgeAuthError)
