"""The ``local`` forge: issues from files, pull requests and comments kept in golem's store.

Nothing leaves the machine: a pull request is a record (title, body, branches, labels,
the diff and each check's result) numbered per repository, with a url like
``golem://local/<repo>/pulls/<n>``; ``golem prs ls|show`` reads them back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from golem.core.check_results import CheckResult
from golem.core.errors import ForgeNotFound, ForgeRequestRejected, PullRequestExists
from golem.forge.ci import CIJob, CIStatus
from golem.forge.contracts import (
    ForgeComment,
    Issue,
    IssueComment,
    PullRequest,
    PullRequestDraft,
)
from golem.forge.issue_files import read_issue_file
from golem.forge.reviews import Permission, ReviewDiscussion
from golem.store import CommentRecord, Store

__all__ = ["LocalForge", "comment_target", "local_pull_request_url"]


def local_pull_request_url(repo: str, number: int | str = "{number}") -> str:
    """``golem://local/<repo>/pulls/<number>`` (``{number}`` until the store numbers it)."""
    return f"golem://local/{quote(repo.strip('/'), safe='/:@')}/pulls/{number}"


def comment_target(issue: Issue) -> str:
    """What a comment on ``issue`` is filed under: ``repo#number``, else its url."""
    if issue.repo is not None and issue.number is not None:
        return f"{issue.repo}#{issue.number}"
    if issue.url is not None:
        return issue.url
    raise ForgeRequestRejected(
        f"cannot comment on {issue.title!r}: it has neither a repository and number nor a "
        "url; read it with fetch_issue first"
    )


class LocalForge:
    """Issues from local files; pull requests and comments in golem's ``store`` (as JSON
    records; this maps them to the forge's models).

    ``labels`` are added to every pull request; relative issue paths are read from
    ``base_dir`` (default: the current directory).
    """

    name = "local"

    def __init__(
        self,
        store: Store,
        *,
        labels: Sequence[str] = (),
        base_dir: Path | None = None,
    ) -> None:
        self.store = store
        self.labels = list(labels)
        self.base_dir = base_dir

    async def fetch_issue(self, ref: str) -> Issue:
        """The issue in file ``ref``: markdown (``# Title`` then the body), or YAML or
        JSON with title, body, comments and labels."""
        path = Path(ref).expanduser()
        if self.base_dir is not None and not path.is_absolute():
            path = self.base_dir / path
        return read_issue_file(path)

    async def open_pull_request(
        self, draft: PullRequestDraft, *, diff: str = "", checks: list[CheckResult] | None = None
    ) -> PullRequest:
        """Record a pull request with its diff and checks. Like GitHub, refuses a second
        one for the same branch (``PullRequestExists`` with its ``url``)."""
        existing = await self.find_pull_request(draft.repo, draft.head)
        if existing is not None:
            raise PullRequestExists(
                f"a pull request for {draft.head} of {draft.repo} is already open: "
                f"{existing.url}; update it, or push to a new branch",
                url=existing.url,
            )
        labels = [*self.labels, *(x for x in draft.labels if x not in self.labels)]
        pr = PullRequest(
            provider=self.name,
            number=0,
            url=local_pull_request_url(draft.repo),
            repo=draft.repo,
            base=draft.base,
            head=draft.head,
            title=draft.title,
            body=draft.body,
            draft=draft.draft,
            labels=labels,
            diff=diff,
            checks=list(checks or []),
            issue=draft.issue,
        )

        def numbered(number: int) -> str:
            url = pr.url.replace("{number}", str(number))
            return pr.model_copy(update={"number": number, "url": url}).model_dump_json()

        record = await self.store.forge.add_pull_request(pr.repo, pr.created, numbered)
        return PullRequest.model_validate_json(record.data)

    async def comment(self, issue: Issue, body: str) -> None:
        """Record a comment on an issue, or on a pull request (``PullRequest.as_issue()``)."""
        await self.store.forge.add_comment(CommentRecord(target=comment_target(issue), body=body))

    async def pull_requests(self, repo: str | None = None) -> list[PullRequest]:
        """The recorded pull requests, newest first (of one repository, when given)."""
        records = await self.store.forge.pull_requests(repo)
        return [PullRequest.model_validate_json(record.data) for record in records]

    async def find_pull_request(self, repo: str, head: str) -> PullRequest | None:
        """The recorded pull request from branch ``head``, or None."""
        found = (pr for pr in await self.pull_requests(repo) if pr.head == head)
        return next(found, None)

    async def pull_request(self, repo: str, number: int) -> PullRequest | None:
        """One recorded pull request, or None."""
        record = await self.store.forge.pull_request(repo, number)
        return PullRequest.model_validate_json(record.data) if record is not None else None

    async def add_labels(self, pr: PullRequest, labels: Sequence[str]) -> list[str]:
        """Add ``labels`` to a recorded pull request (kept in its record)."""
        current = await self.fetch_pull_request(pr.repo, pr.number)
        merged = [*current.labels, *(x for x in labels if x not in current.labels)]
        updated = current.model_copy(update={"labels": merged})
        await self.store.forge.update_pull_request(pr.repo, pr.number, updated.model_dump_json())
        return merged

    async def fetch_pull_request(self, repo: str, number: int) -> PullRequest:
        """A recorded pull request (ForgeNotFound when there is none)."""
        found = await self.pull_request(repo, number)
        if found is None:
            raise ForgeNotFound(
                f"the local forge has no pull request {repo}#{number}; see `golem prs ls`"
            )
        return found

    async def ci_status(self, repo: str, commit: str, *, base: str | None = None) -> CIStatus:
        """Nothing: the local forge runs no CI (golem's own checks are the verification)."""
        return CIStatus(commit=commit, supported=False)

    async def ci_failure(self, repo: str, job: CIJob) -> CIJob:
        """``job`` as it is: the local forge has no CI logs."""
        return job

    async def review_discussion(self, pr: PullRequest) -> ReviewDiscussion:
        """The comments recorded on the pull request, as its conversation."""
        comments = await self.comments(pr.as_issue())
        return ReviewDiscussion(
            comments=[IssueComment(author="", body=c.body, created=None) for c in comments]
        )

    async def reply(self, pr: PullRequest, thread: str | None, body: str) -> None:
        """Record a reply as a comment on the pull request (the local forge has no
        threads)."""
        await self.comment(pr.as_issue(), body)

    async def request_review(self, pr: PullRequest, reviewers: Sequence[str]) -> None:
        """Nothing to ask: the local forge's reviewer is whoever reads ``golem prs``."""

    async def permission(self, repo: str, user: str) -> Permission:
        """Everyone on this machine owns its local repositories."""
        return "admin"

    async def comments(self, issue: Issue | None = None) -> list[ForgeComment]:
        """Recorded comments, oldest first (on one issue or pull request, when given)."""
        target = None if issue is None else comment_target(issue)
        records = await self.store.forge.comments(target)
        return [ForgeComment.model_validate(record.model_dump()) for record in records]
