"""The ``github`` forge: issues read from, and pull requests opened on, GitHub's REST API."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import httpx

from golem.core.check_results import CheckResult
from golem.core.errors import ForgeError, ForgeRequestRejected, PullRequestExists
from golem.forge import github_ci, github_reviews
from golem.forge.auth import ForgeCredentials, github_source
from golem.forge.ci import CIJob, CIStatus
from golem.forge.config import GITHUB_API, GitHubConfig
from golem.forge.contracts import (
    Issue,
    MergedPullRequest,
    PullRequest,
    PullRequestDraft,
)
from golem.forge.github_api import GitHubAPI, GitHubReply
from golem.forge.refs import IssueRef, closed_issues, parse_issue_ref, split_repo
from golem.forge.reviews import Permission, ReviewDiscussion
from golem.forge.tokens import StaticToken, TokenSource

__all__ = ["GitHubForge"]

log = logging.getLogger(__name__)

WEB_HOSTS = frozenset({"github.com", "www.github.com"})
PAGE = 100
MAX_MERGED_PAGES = 20


class GitHubForge:
    """Issues and pull requests on GitHub (or a GitHub Enterprise server, by ``api_url``).

    Its tokens come from ``credentials.github`` when credentials are given (None: no
    token), else are ``token`` as it is, else the App ``config.app_id`` names or the token
    of ``config.token_env``; each request asks for the current one (``golem.forge.tokens``).
    Reading public issues works without one. ``labels`` are added to every pull request.
    Give a ``transport`` (``httpx.MockTransport``) to answer requests in process;
    ``backoff`` is the first wait (seconds) before retrying a 5xx.
    """

    name = "github"

    def __init__(
        self,
        config: GitHubConfig | None = None,
        *,
        token: str | None = None,
        credentials: ForgeCredentials | None = None,
        labels: Sequence[str] = (),
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: float = 1.0,
    ) -> None:
        self.config = config or GitHubConfig()
        self.labels = list(labels)
        source = None
        tokens: TokenSource | None
        if credentials is not None:
            tokens, source = credentials.github_tokens, credentials.source or None
        elif token is not None:
            tokens = StaticToken(token, f"${self.config.token_env}")
        else:
            tokens = github_source(self.config)
        self.api = GitHubAPI(
            self.config, tokens=tokens, token_source=source, transport=transport, backoff=backoff
        )

    async def fetch_issue(self, ref: str) -> Issue:
        """The issue (or pull request) ``ref`` names, with every comment, oldest first."""
        issue_ref = self._parse(ref)
        path = f"/repos/{issue_ref.repo}/issues/{issue_ref.number}"
        what = f"issue {issue_ref}"
        data = await self.api.call("GET", path, what)
        comments = await self.api.paginate(f"{path}/comments", f"the comments of {what}")
        return Issue(
            title=data["title"],
            body=data.get("body") or "",
            author=(data.get("user") or {}).get("login") or "",
            comments=[github_reviews.issue_comment(c) for c in comments],
            labels=[_label_name(label) for label in data.get("labels") or []],
            url=data.get("html_url"),
            number=data["number"],
            repo=issue_ref.repo,
        )

    async def open_pull_request(
        self, draft: PullRequestDraft, *, diff: str = "", checks: list[CheckResult] | None = None
    ) -> PullRequest:
        """Open a pull request for the pushed ``draft.head`` and add its labels. ``diff`` and
        ``checks`` stay with golem (the body should tell the checks). A repository without
        draft pull requests gets a ready one, marked by its labels. Raises
        ``PullRequestExists`` (with its ``url``) when one is open for the branch."""
        owner, name = split_repo(draft.repo)
        repo = f"{owner}/{name}"
        payload = {
            "title": draft.title,
            "head": draft.head,
            "base": draft.base,
            "body": draft.body,
            "draft": draft.draft,
        }
        what = f"a pull request from {draft.head} into {draft.base} of {repo}"
        try:
            data = await self._create(repo, payload, what)
        except PullRequestExists as exc:
            existing = await self.find_pull_request(repo, draft.head)
            if existing is not None:
                exc.url = existing.url
                exc.message = f"{exc.message}; it is {existing.url}"
                exc.args = (exc.message,)
            raise
        pr = _pull_request(data, repo, issue=draft.issue)
        labels = [*self.labels, *(x for x in draft.labels if x not in self.labels)]
        if labels:
            pr.labels = await self._add_labels(repo, pr.number, labels)
        return pr

    async def comment(self, issue: Issue, body: str) -> None:
        """Comment on an issue or pull request (``PullRequest.as_issue()``)."""
        if issue.repo is None or issue.number is None:
            raise ForgeRequestRejected(
                f"cannot comment on {issue.url or issue.title!r} on GitHub: it has no "
                "repository and number (an issue read from a local file?)"
            )
        owner, name = split_repo(issue.repo)
        path = f"/repos/{owner}/{name}/issues/{issue.number}/comments"
        await self.api.call(
            "POST", path, f"a comment on {issue.repo}#{issue.number}", json={"body": body}
        )

    async def add_labels(self, pr: PullRequest, labels: Sequence[str]) -> list[str]:
        """Add ``labels`` to a pull request; returns all its labels."""
        return await self._label(pr.repo, pr.number, labels)

    async def _label(self, repo: str, number: int, labels: Sequence[str]) -> list[str]:
        owner, name = split_repo(repo)
        path = f"/repos/{owner}/{name}/issues/{number}/labels"
        data = await self.api.call(
            "POST", path, f"labels on {owner}/{name}#{number}", json={"labels": list(labels)}
        )
        return [_label_name(label) for label in data or []]

    async def find_pull_request(self, repo: str, head: str) -> PullRequest | None:
        """The open pull request from branch ``head`` (``owner:branch`` for a fork), or
        None."""
        owner, name = split_repo(repo)
        qualified = head if ":" in head else f"{owner}:{head}"
        data = await self.api.call(
            "GET",
            f"/repos/{owner}/{name}/pulls",
            f"the pull requests of {owner}/{name}",
            params={"head": qualified, "state": "open"},
        )
        return _pull_request(data[0], f"{owner}/{name}") if data else None

    async def _create(self, repo: str, payload: dict[str, Any], what: str) -> GitHubReply:
        try:
            return await self.api.call("POST", f"/repos/{repo}/pulls", what, json=payload)
        except PullRequestExists:
            raise
        except ForgeRequestRejected as exc:
            if not (payload["draft"] and "draft" in exc.message.lower()):
                raise
            log.warning("%s: draft pull requests are not available; opening a ready one", repo)
            ready = {**payload, "draft": False}
            return await self.api.call("POST", f"/repos/{repo}/pulls", what, json=ready)

    async def _add_labels(self, repo: str, number: int, labels: list[str]) -> list[str]:
        try:
            return await self._label(repo, number, labels)
        except ForgeError as exc:
            # The pull request is open: losing it over its labels would lose more.
            log.warning("%s#%d opened, but its labels were not added: %s", repo, number, exc)
            return []

    async def fetch_pull_request(self, repo: str, number: int) -> PullRequest:
        """Pull request ``repo#number`` (open or closed) with its head commit, and whether
        its head branch is in another repository (a fork, or one since deleted)."""
        owner, name = split_repo(repo)
        path = f"/repos/{owner}/{name}/pulls/{number}"
        data = await self.api.call("GET", path, f"pull request {owner}/{name}#{number}")
        return _pull_request(data, f"{owner}/{name}")

    async def merged_pull_requests(self, repo: str, limit: int) -> list[MergedPullRequest]:
        """The ``limit`` pull requests of ``repo`` merged last (newest first), read from its
        closed ones, most recently updated first (at most ``MAX_MERGED_PAGES`` pages)."""
        owner, name = split_repo(repo)
        path, found = f"/repos/{owner}/{name}/pulls", []
        for page in range(1, MAX_MERGED_PAGES + 1):
            params: dict[str, str | int] = {
                "state": "closed",
                "sort": "updated",
                "direction": "desc",
                "per_page": PAGE,
                "page": page,
            }
            what = f"the pull requests of {owner}/{name}"
            data = await self.api.call("GET", path, what, params=params)
            found += [_merged(item) for item in data or [] if item.get("merged_at")]
            if len(data or []) < PAGE or len(found) >= limit:
                break
        found.sort(key=lambda pr: pr.merged_at, reverse=True)
        return found[:limit]

    async def ci_status(self, repo: str, commit: str, *, base: str | None = None) -> CIStatus:
        """The check runs and commit statuses on ``commit``; with ``base``, the checks its
        branch protection and rulesets require (None where GitHub says none or nothing)."""
        return await github_ci.ci_status(self.api, repo, commit, base)

    async def ci_failure(self, repo: str, job: CIJob) -> CIJob:
        """``job`` with its failed steps and the end of its log (an Actions job), or its
        output and failure annotations (another app's check), or its description."""
        return await github_ci.ci_failure(self.api, repo, job)

    async def review_discussion(self, pr: PullRequest) -> ReviewDiscussion:
        """Its reviews, review threads (resolved and outdated marked) and conversation."""
        return await github_reviews.review_discussion(self.api, pr)

    async def reply(self, pr: PullRequest, thread: str | None, body: str) -> None:
        """Reply in review thread ``thread`` (its first comment's id), or on the
        conversation when None."""
        await github_reviews.reply(self.api, pr, thread, body)

    async def request_review(self, pr: PullRequest, reviewers: Sequence[str]) -> None:
        """Ask ``reviewers`` (but the pull request's author) to review again."""
        await github_reviews.request_review(self.api, pr, reviewers)

    async def permission(self, repo: str, user: str) -> Permission:
        """``user``'s permission in ``repo`` (``none`` when not a collaborator)."""
        return await github_reviews.permission(self.api, repo, user)

    def _parse(self, ref: str) -> IssueRef:
        issue_ref = parse_issue_ref(ref)
        on_github = self.config.api_url.rstrip("/") == GITHUB_API
        if issue_ref.host is not None and on_github and issue_ref.host not in WEB_HOSTS:
            raise ForgeRequestRejected(
                f"{ref} is not on github.com: for a GitHub Enterprise server, set "
                f"forge.github.api_url to https://{issue_ref.host}/api/v3"
            )
        return issue_ref


def _label_name(label: Any) -> str:
    return str(label["name"]) if isinstance(label, dict) else str(label)


def _pull_request(data: Any, repo: str, *, issue: int | None = None) -> PullRequest:
    return PullRequest(
        provider="github",
        number=data["number"],
        url=data["html_url"],
        repo=repo,
        base=data["base"]["ref"],
        head=data["head"]["ref"],
        title=data["title"],
        body=data.get("body") or "",
        draft=bool(data.get("draft")),
        labels=[_label_name(label) for label in data.get("labels") or []],
        issue=issue,
        head_commit=data["head"].get("sha"),
        fork=_from_fork(data, repo),
    )


def _merged(data: Any) -> MergedPullRequest:
    body = data.get("body") or ""
    return MergedPullRequest(
        number=data["number"],
        title=data["title"],
        body=body,
        url=data.get("html_url"),
        merge_commit=data.get("merge_commit_sha") or "",
        merged_at=data["merged_at"],
        closes=closed_issues(body),
    )


def _from_fork(data: Any, repo: str) -> bool:
    """Whether the head branch lives outside ``repo`` (a deleted fork's head repo is null)."""
    head_repo = data["head"].get("repo", {"full_name": repo})
    if head_repo is None:
        return True
    base_repo = (data["base"].get("repo") or {}).get("full_name") or repo
    return str(head_repo.get("full_name") or base_repo).lower() != str(base_repo).lower()
