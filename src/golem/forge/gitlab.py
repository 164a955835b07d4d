"""The ``gitlab`` forge: issues read from, and merge requests opened on, GitLab's REST API v4
(gitlab.com, or a self-managed instance by ``base_url``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from golem.core.check_results import CheckResult
from golem.core.errors import ForgeNotFound, ForgeRequestRejected, PullRequestExists
from golem.forge.auth import ForgeCredentials, gitlab_source
from golem.forge.ci import CIJob, CIStatus
from golem.forge.config import GitLabConfig
from golem.forge.contracts import (
    Issue,
    MergedPullRequest,
    PullRequest,
    PullRequestDraft,
)
from golem.forge.gitlab_api import GitLabAPI, project_id
from golem.forge.gitlab_ci import read_ci_status, read_job_failure
from golem.forge.gitlab_reviews import note_comment, read_review_discussion
from golem.forge.refs import GitLabRef, closed_issues, parse_gitlab_ref, split_project
from golem.forge.reviews import Permission, ReviewDiscussion
from golem.forge.tokens import StaticToken, TokenSource

__all__ = ["GitLabForge"]

DRAFT = "Draft: "
PAGE = 100
MAX_MERGED_PAGES = 20
ACCESS_LEVELS: tuple[tuple[int, Permission], ...] = ((40, "admin"), (30, "write"), (1, "read"))
"""GitLab's access levels: Owner (50) and Maintainer (40) admin, Developer (30) write,
Reporter (20), Guest (10) and Minimal (5) read."""


class GitLabForge:
    """Issues and merge requests on GitLab.

    Its tokens come from ``credentials.gitlab`` when credentials are given (None: no
    token), else are ``token`` as it is, else the OAuth grant or the token ``config``
    names; each request asks for the current one (``golem.forge.tokens``). Reading public
    issues works without one. ``labels`` are added to every merge request. Give a
    ``transport`` to answer requests in process; ``backoff`` is the first wait (seconds)
    before a retry.
    """

    name = "gitlab"

    def __init__(
        self,
        config: GitLabConfig | None = None,
        *,
        token: str | None = None,
        credentials: ForgeCredentials | None = None,
        labels: Sequence[str] = (),
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: float = 1.0,
    ) -> None:
        self.config = config or GitLabConfig()
        self.labels = list(labels)
        source = None
        tokens: TokenSource | None
        if credentials is not None:
            tokens, source = credentials.gitlab_tokens, credentials.source or None
        elif token is not None:
            tokens = StaticToken(token, f"${self.config.token_env}")
        else:
            tokens = gitlab_source(self.config, None)
        self.api = GitLabAPI(
            self.config, tokens=tokens, token_source=source, transport=transport, backoff=backoff
        )

    async def fetch_issue(self, ref: str) -> Issue:
        """The issue (``#N``) or merge request (``!N``) ``ref`` names, with every note but
        GitLab's system notes, oldest first."""
        parsed = self._parse(ref)
        kind = "merge_requests" if parsed.merge_request else "issues"
        path = f"/projects/{project_id(parsed.project)}/{kind}/{parsed.iid}"
        what = f"{'merge request' if parsed.merge_request else 'issue'} {parsed}"
        data = await self.api.call("GET", path, what)
        notes = await self.api.paginate(
            f"{path}/notes", f"the notes of {what}", {"sort": "asc", "order_by": "created_at"}
        )
        return Issue(
            title=_title(data),
            body=data.get("description") or "",
            author=(data.get("author") or {}).get("username") or "",
            comments=[note_comment(note) for note in notes if not note.get("system")],
            labels=_labels(data),
            url=data.get("web_url"),
            number=data["iid"],
            repo=parsed.project,
            pull_request=parsed.merge_request,
        )

    async def open_pull_request(
        self, draft: PullRequestDraft, *, diff: str = "", checks: list[CheckResult] | None = None
    ) -> PullRequest:
        """Open a merge request for the pushed ``draft.head`` with its labels (a draft's
        title starts with ``Draft:``, GitLab's way). Raises ``PullRequestExists`` (with its
        ``url``) when one is open for the branch."""
        project = self._project(draft.repo)
        labels = [*self.labels, *(x for x in draft.labels if x not in self.labels)]
        payload = {
            "source_branch": draft.head,
            "target_branch": draft.base,
            "title": f"{DRAFT}{draft.title}" if draft.draft else draft.title,
            "description": draft.body,
            "labels": ",".join(labels),
        }
        what = f"a merge request from {draft.head} into {draft.base} of {project}"
        try:
            data = await self.api.call(
                "POST", f"/projects/{project_id(project)}/merge_requests", what, json=payload
            )
        except PullRequestExists as exc:
            existing = await self.find_pull_request(project, draft.head)
            if existing is not None:
                exc.url = existing.url
                exc.message = f"{exc.message}; it is {existing.url}"
                exc.args = (exc.message,)
            raise
        return merge_request(data, project, issue=draft.issue)

    async def find_pull_request(self, repo: str, head: str) -> PullRequest | None:
        """The open merge request from branch ``head``, or None."""
        project = self._project(repo)
        found = await self.api.call(
            "GET",
            f"/projects/{project_id(project)}/merge_requests",
            f"the merge requests of {project}",
            params={"source_branch": head, "state": "opened"},
        )
        return merge_request(found[0], project) if found else None

    async def fetch_pull_request(self, repo: str, number: int) -> PullRequest:
        """Merge request ``!number`` of ``repo``, with its head commit."""
        project = self._project(repo)
        data = await self.api.call("GET", self._mr_path(project, number), f"{project}!{number}")
        return merge_request(data, project)

    async def merged_pull_requests(self, repo: str, limit: int) -> list[MergedPullRequest]:
        """The ``limit`` merge requests of ``repo`` merged last (newest first), each with
        its merge commit (or its squashed commit)."""
        project = self._project(repo)
        path, found = f"/projects/{project_id(project)}/merge_requests", []
        for page in range(1, MAX_MERGED_PAGES + 1):
            params: dict[str, str | int] = {
                "state": "merged",
                "order_by": "updated_at",
                "sort": "desc",
                "per_page": PAGE,
                "page": page,
            }
            what = f"the merge requests of {project}"
            data = await self.api.call("GET", path, what, params=params)
            found += [_merged(item) for item in data or [] if item.get("merged_at")]
            if len(data or []) < PAGE or len(found) >= limit:
                break
        found.sort(key=lambda mr: mr.merged_at, reverse=True)
        return found[:limit]

    async def comment(self, issue: Issue, body: str) -> None:
        """A note on an issue, or on a merge request (``Issue.pull_request``)."""
        if issue.repo is None or issue.number is None:
            raise ForgeRequestRejected(
                f"cannot comment on {issue.url or issue.title!r} on GitLab: it has no "
                "project and number (an issue read from a local file?)"
            )
        project = self._project(issue.repo)
        kind, mark = ("merge_requests", "!") if issue.pull_request else ("issues", "#")
        path = f"/projects/{project_id(project)}/{kind}/{issue.number}/notes"
        what = f"a note on {project}{mark}{issue.number}"
        await self.api.call("POST", path, what, json={"body": body})

    async def add_labels(self, pr: PullRequest, labels: Sequence[str]) -> list[str]:
        """Add ``labels`` to a merge request; returns all its labels."""
        project = self._project(pr.repo)
        data = await self.api.call(
            "PUT",
            self._mr_path(project, pr.number),
            f"labels on {project}!{pr.number}",
            json={"add_labels": ",".join(labels)},
        )
        return _labels(data)

    async def ci_status(self, repo: str, commit: str, *, base: str | None = None) -> CIStatus:
        """The jobs of the newest pipeline on ``commit``, with external commit statuses
        (``required`` is None: GitLab's free API names no required checks)."""
        return await read_ci_status(self.api, self._project(repo), commit)

    async def ci_failure(self, repo: str, job: CIJob) -> CIJob:
        """``job`` with the end of its trace and the log section it failed in."""
        return await read_job_failure(self.api, self._project(repo), job)

    async def review_discussion(self, pr: PullRequest) -> ReviewDiscussion:
        """The merge request's approvals, threads (resolved or not) and notes."""
        project = self._project(pr.repo)
        return await read_review_discussion(self.api, self._mr_path(project, pr.number), pr)

    async def reply(self, pr: PullRequest, thread: str | None, body: str) -> None:
        """A note in discussion ``thread``, or on the merge request when None."""
        project = self._project(pr.repo)
        path = self._mr_path(project, pr.number)
        if thread is None:
            what = f"a note on {project}!{pr.number}"
            await self.api.call("POST", f"{path}/notes", what, json={"body": body})
            return
        what = f"a reply in discussion {thread} of {project}!{pr.number}"
        await self.api.call("POST", f"{path}/discussions/{thread}/notes", what, json={"body": body})

    async def request_review(self, pr: PullRequest, reviewers: Sequence[str]) -> None:
        """Make ``reviewers`` (usernames) the merge request's reviewers again, beside any
        it has (GitLab's REST API has no re-request: setting them notifies new ones)."""
        project = self._project(pr.repo)
        path = self._mr_path(project, pr.number)
        current = await self.api.call("GET", path, f"{project}!{pr.number}")
        ids = [int(person["id"]) for person in current.get("reviewers") or []]
        for name in reviewers:
            found = await self._user_id(name)
            if found is None:
                raise ForgeNotFound(
                    f"GitLab knows no user {name!r} to ask for a review of {project}!"
                    f"{pr.number}: check the username"
                )
            ids += [found] if found not in ids else []
        what = f"reviewers of {project}!{pr.number}"
        await self.api.call("PUT", path, what, json={"reviewer_ids": ids})

    async def permission(self, repo: str, user: str) -> Permission:
        """What ``user`` (a username, or a numeric user id) may do in ``repo``, by their
        access level there (inherited from groups too)."""
        project = self._project(repo)
        number = int(user) if user.isdigit() else await self._user_id(user)
        if number is None:
            return "none"
        try:
            member = await self.api.call(
                "GET",
                f"/projects/{project_id(project)}/members/all/{number}",
                f"member {user} of {project}",
            )
        except ForgeNotFound:
            return "none"
        level = int(member.get("access_level") or 0)
        return next((name for floor, name in ACCESS_LEVELS if level >= floor), "none")

    async def _user_id(self, username: str) -> int | None:
        found = await self.api.call(
            "GET", "/users", f"user {username}", params={"username": username}
        )
        return int(found[0]["id"]) if found else None

    @staticmethod
    def _mr_path(project: str, iid: int) -> str:
        return f"/projects/{project_id(project)}/merge_requests/{iid}"

    def _parse(self, ref: str) -> GitLabRef:
        parsed = parse_gitlab_ref(ref)
        host = self.config.git_host()
        if parsed.host is None:
            return parsed
        if parsed.host != host:
            raise ForgeRequestRejected(
                f"{ref} is not on {host}: for a self-managed GitLab, set "
                f"forge.gitlab.base_url to https://{parsed.host}"
            )
        project = self._unprefixed(parsed.project)
        return GitLabRef(project, parsed.iid, parsed.merge_request, parsed.host)

    def _project(self, repo: str) -> str:
        """The project path of ``repo`` (a path, or a URL of this GitLab)."""
        project = split_project(repo)
        return self._unprefixed(project) if "://" in repo else project

    def _unprefixed(self, project: str) -> str:
        """``project`` without the path a GitLab under a path (``https://HOST/gitlab``)
        puts before every project in its URLs."""
        prefix = urlsplit(self.config.base_url).path.strip("/")
        return project.removeprefix(f"{prefix}/") if prefix else project


def merge_request(data: Any, project: str, *, issue: int | None = None) -> PullRequest:
    """A GitLab merge request as golem's pull request."""
    draft = bool(data.get("draft") or data.get("work_in_progress"))
    source, target = data.get("source_project_id"), data.get("target_project_id")
    return PullRequest(
        provider="gitlab",
        number=data["iid"],
        url=data["web_url"],
        repo=project,
        base=data["target_branch"],
        head=data["source_branch"],
        title=_title(data),
        body=data.get("description") or "",
        draft=draft,
        labels=_labels(data),
        issue=issue,
        head_commit=data.get("sha"),
        fork=source is not None and target is not None and source != target,
    )


def _merged(data: Any) -> MergedPullRequest:
    body = data.get("description") or ""
    commit = data.get("merge_commit_sha") or data.get("squash_commit_sha") or ""
    return MergedPullRequest(
        number=data["iid"],
        title=_title(data),
        body=body,
        url=data.get("web_url"),
        merge_commit=commit,
        merged_at=data["merged_at"],
        closes=closed_issues(body),
    )


def _title(data: Any) -> str:
    title = str(data.get("title") or "")
    if data.get("draft") or data.get("work_in_progress"):
        for prefix in ("Draft:", "[Draft]", "(Draft)", "Draft -"):
            if title.lower().startswith(prefix.lower()):
                return title[len(prefix) :].lstrip()
    return title


def _labels(data: Any) -> list[str]:
    return [
        str(label["name"]) if isinstance(label, dict) else str(label)
        for label in data.get("labels") or []
    ]
