"""An in-memory ``PullRequestStore``, for tests and demos (golem's SQL store is the real
one): the local forge's pull requests and comments, gone when the process ends."""

from __future__ import annotations

import threading

from golem.forge.contracts import ForgeComment, PullRequest

__all__ = ["MemoryPullRequestStore"]


class MemoryPullRequestStore:
    """Pull requests numbered per repository from 1, and comments, in memory. Callers
    get copies: changing what they get changes nothing stored."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pull_requests: list[PullRequest] = []
        self._comments: list[ForgeComment] = []

    def add_pull_request(self, pr: PullRequest) -> PullRequest:
        """Keep ``pr`` with the next number of its repository (``{number}`` in its url
        filled in); returns it."""
        with self._lock:
            number = 1 + max(
                (p.number for p in self._pull_requests if p.repo == pr.repo), default=0
            )
            url = pr.url.replace("{number}", str(number))
            numbered = pr.model_copy(update={"number": number, "url": url}, deep=True)
            self._pull_requests.append(numbered)
            return numbered.model_copy(deep=True)

    def list_pull_requests(self, repo: str | None = None) -> list[PullRequest]:
        """Pull requests, newest first (of one repository, when given)."""
        with self._lock:
            kept = [p for p in self._pull_requests if repo is None or p.repo == repo]
            return [p.model_copy(deep=True) for p in reversed(kept)]

    def get_pull_request(self, repo: str, number: int) -> PullRequest | None:
        """One pull request, or None."""
        with self._lock:
            for pr in self._pull_requests:
                if pr.repo == repo and pr.number == number:
                    return pr.model_copy(deep=True)
            return None

    def add_comment(self, comment: ForgeComment) -> ForgeComment:
        """Keep a comment; returns it."""
        with self._lock:
            self._comments.append(comment.model_copy(deep=True))
            return comment.model_copy(deep=True)

    def list_comments(self, target: str | None = None) -> list[ForgeComment]:
        """Comments, oldest first (on one issue or pull request, when given)."""
        with self._lock:
            return [
                c.model_copy(deep=True)
                for c in self._comments
                if target is None or c.target == target
            ]
