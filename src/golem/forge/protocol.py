"""The forge layer's contract: issues in, pull requests out, wherever the repository lives.

A ``Forge`` reads issues and opens pull requests (GitHub's or GitLab's REST API, or
golem's own store for the ``local`` forge). Git itself (clone, branch, commit, push) runs
on the host through ``golem.forge.git``; tokens never enter a box.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from golem.core.check_results import CheckResult
from golem.forge.ci import CIJob, CIStatus
from golem.forge.contracts import Issue, PullRequest, PullRequestDraft
from golem.forge.reviews import Permission, ReviewDiscussion

__all__ = ["Forge"]


class Forge(Protocol):
    """A place issues come from and pull requests go to."""

    name: str

    async def fetch_issue(self, ref: str) -> Issue:
        """An issue by URL, ``owner/name#N`` (GitLab: ``group/project#N``, or ``!N`` for a
        merge request), or (local forge) a file path."""
        ...

    async def open_pull_request(
        self, draft: PullRequestDraft, *, diff: str = "", checks: list[CheckResult] | None = None
    ) -> PullRequest:
        """Open a pull request for a pushed branch, with its labels."""
        ...

    async def find_pull_request(self, repo: str, head: str) -> PullRequest | None:
        """The open pull request from branch ``head``, or None."""
        ...

    async def comment(self, issue: Issue, body: str) -> None:
        """Comment on an issue (the PR, or why golem escalated)."""
        ...

    async def add_labels(self, pr: PullRequest, labels: Sequence[str]) -> list[str]:
        """Add ``labels`` to a pull request; returns all its labels."""
        ...

    async def fetch_pull_request(self, repo: str, number: int) -> PullRequest:
        """An open or closed pull request by number, with its head commit
        (ForgeNotFound when there is none)."""
        ...

    async def ci_status(self, repo: str, commit: str, *, base: str | None = None) -> CIStatus:
        """Every CI job the forge reports on ``commit`` (without their logs); with
        ``base``, the checks that branch requires where the forge says."""
        ...

    async def ci_failure(self, repo: str, job: CIJob) -> CIJob:
        """``job`` with what failed in it: its failed steps and the end of its log."""
        ...

    async def review_discussion(self, pr: PullRequest) -> ReviewDiscussion:
        """The pull request's reviews, review threads and conversation, oldest first."""
        ...

    async def reply(self, pr: PullRequest, thread: str | None, body: str) -> None:
        """Reply in review thread ``thread`` (``ReviewThread.id``), or on the pull request's
        conversation when None."""
        ...

    async def request_review(self, pr: PullRequest, reviewers: Sequence[str]) -> None:
        """Ask ``reviewers`` to review the pull request again."""
        ...

    async def permission(self, repo: str, user: str) -> Permission:
        """What ``user`` (a login, or GitLab's numeric user id) may do in ``repo``."""
        ...
