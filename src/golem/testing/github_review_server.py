"""The review part of the loopback GitHub (``GitHubServer`` has it): a pull request by
number, reviews, review comments and their replies, resolved threads (GraphQL),
re-requested reviewers, collaborators' permissions and the token's own account.

    pr = server.add_pull("octo/demo", "golem/fix")          # opened by server.login
    root = server.add_review_comment("octo/demo", pr["number"], "Rename it", author="alice",
                                     path="calc.py", line=3)
    server.add_review_comment("octo/demo", pr["number"], "Agreed", author="bob",
                              reply_to=root["id"])
    server.add_review("octo/demo", pr["number"], "alice", "CHANGES_REQUESTED", "See the notes")
    server.resolve("octo/demo", root["id"])
    server.set_permission("octo/demo", "alice", "write")       # role maintain: "maintain"
    server.head_sha = lambda repo, branch: git("rev-parse", branch, cwd=bare)

``head_sha`` (asked when a pull request is read) lets a pull request's head follow what
was pushed to a bare repository. Pull requests opened through the API are authored by
``login`` (the token's account, ``GET /user``); requests to review again are kept
(``requested_reviewers``), and refused with GitHub's 422 for the author.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from golem.testing.wire import RecordedRequest, Reply

__all__ = ["REVIEW_ROUTES", "ReviewEndpoints"]

REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
PULL = rf"{REPO}/pulls/(?P<number>\d+)"
REVIEW_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(rf"^{PULL}$"), "_get_pull"),
    ("GET", re.compile(rf"^{PULL}/reviews$"), "_list_reviews"),
    ("GET", re.compile(rf"^{PULL}/comments$"), "_list_review_comments"),
    ("POST", re.compile(rf"^{PULL}/comments/(?P<root>\d+)/replies$"), "_reply"),
    ("POST", re.compile(rf"^{PULL}/requested_reviewers$"), "_request_reviewers"),
    ("GET", re.compile(rf"^{REPO}/collaborators/(?P<user>[^/]+)/permission$"), "_permission"),
    ("GET", re.compile(r"^/user$"), "_user"),
    ("POST", re.compile(r"^/graphql$"), "_graphql"),
)
PERMISSIONS = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read"}


class ReviewEndpoints:
    """Review state and endpoints, mixed into ``GitHubServer`` (which holds ``_state``)."""

    _state: threading.Lock
    _ids: int
    _items: dict[str, dict[int, dict[str, Any]]]

    def _init_reviews(self) -> None:
        self.login = "golem-bot"
        """The token's own account: it opens pull requests and comments."""
        self.head_sha: Callable[[str, str], str | None] | None = None
        self._reviews: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._review_comments: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._resolved: set[tuple[str, int]] = set()
        self._permissions: dict[tuple[str, str], str] = {}
        self._requested: dict[tuple[str, int], list[str]] = {}

    def add_pull(
        self,
        repo: str,
        head: str,
        *,
        base: str = "main",
        title: str = "A change",
        body: str = "",
        fork: str | None = None,
        author: str | None = None,
    ) -> dict[str, Any]:
        """Open a pull request from ``head`` (in repository ``fork`` when given)."""
        with self._state:
            number = max(self._items.get(repo, {}), default=0) + 1
            pull = self._new_pull(repo, number, title, body, head, base)  # type: ignore[attr-defined]
            if fork is not None:
                owner = fork.partition("/")[0]
                pull["head"].update(label=f"{owner}:{head}", repo=_repo(fork))
            pull["user"]["login"] = author or self.login
            self._items.setdefault(repo, {})[number] = pull
            return dict(pull)

    def add_review(
        self, repo: str, number: int, author: str, state: str, body: str = ""
    ) -> dict[str, Any]:
        """Submit a review (``APPROVED``, ``CHANGES_REQUESTED``, ``COMMENTED``, ``PENDING``)."""
        with self._state:
            self._ids += 1
            reviews = self._reviews.setdefault((repo, number), [])
            review = {
                "id": self._ids,
                "user": {"login": author, "id": 3, "type": "User"},
                "body": body,
                "state": state,
                "html_url": f"https://github.com/{repo}/pull/{number}#pullrequestreview-{self._ids}",
                "commit_id": "0" * 40,
                "author_association": "COLLABORATOR",
            }
            if state != "PENDING":
                review["submitted_at"] = f"2024-05-02T10:{len(reviews) % 60:02d}:00Z"
            reviews.append(review)
            return review

    def add_review_comment(
        self,
        repo: str,
        number: int,
        body: str,
        *,
        author: str = "octocat",
        path: str = "README.md",
        line: int | None = 1,
        reply_to: int | None = None,
        on_file: bool = False,
    ) -> dict[str, Any]:
        """Comment on a line (``line`` None: the line changed since, outdated), on a whole
        file (``on_file``), or reply to the thread of comment ``reply_to``."""
        with self._state:
            comment = self._new_review_comment(repo, number, body, author, path, line, reply_to)
            if on_file:
                comment.update(subject_type="file", line=None, original_line=None)
            return comment

    def resolve(self, repo: str, comment_id: int) -> None:
        """Mark the thread that comment ``comment_id`` starts as resolved."""
        with self._state:
            self._resolved.add((repo, comment_id))

    def set_permission(self, repo: str, user: str, role: str) -> None:
        """``user``'s role in ``repo``: admin, maintain, write, triage or read."""
        with self._state:
            self._permissions[(repo, user)] = role

    def review_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """The review comments of ``repo#number``, oldest first, as the API shows them."""
        with self._state:
            return list(self._review_comments.get((repo, number), []))

    def requested_reviewers(self, repo: str, number: int) -> list[str]:
        """Everyone asked to review ``repo#number`` through the API, in order."""
        with self._state:
            return list(self._requested.get((repo, number), []))

    # Endpoints (called with the state lock held) ----------------------------------------

    def _get_pull(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        pull = self._items.get(repo, {}).get(int(number))
        if pull is None or "head" not in pull:
            return _not_found()
        sha = self.head_sha(repo, pull["head"]["ref"]) if self.head_sha is not None else None
        if sha:
            pull["head"]["sha"] = sha
        return Reply.json(pull)

    def _list_reviews(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        if self._pull(repo, number) is None:
            return _not_found()
        return Reply.json(self._reviews.get((repo, int(number)), []))

    def _list_review_comments(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        if self._pull(repo, number) is None:
            return _not_found()
        return Reply.json(self._review_comments.get((repo, int(number)), []))

    def _reply(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str, root: str
    ) -> Reply:
        comments = self._review_comments.get((repo, int(number)), [])
        parent = next((c for c in comments if c["id"] == int(root)), None)
        if self._pull(repo, number) is None or parent is None:
            return _not_found()
        body = request.json.get("body")
        if not isinstance(body, str) or not body:
            return _invalid("PullRequestReviewComment", "body")
        line = parent["line"]
        reply = self._new_review_comment(
            repo, int(number), body, self.login, parent["path"], line, int(root)
        )
        return Reply.json(reply, status=201)

    def _request_reviewers(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        pull = self._pull(repo, number)
        if pull is None:
            return _not_found()
        asked = request.json.get("reviewers") or []
        if pull["user"]["login"] in asked:
            return Reply.json(
                {
                    "message": "Review cannot be requested from pull request author.",
                    "documentation_url": "https://docs.github.com/rest",
                    "status": "422",
                },
                status=422,
            )
        self._requested.setdefault((repo, int(number)), []).extend(asked)
        pull["requested_reviewers"] = [{"login": name} for name in asked]
        return Reply.json(pull, status=201)

    def _permission(
        self, repo: str, request: RecordedRequest, query: dict[str, str], user: str
    ) -> Reply:
        role = self._permissions.get((repo, user))
        if role is None:
            return Reply.json(
                {
                    "message": f"{user} is not a user",
                    "status": "404",
                    "documentation_url": "https://docs.github.com/rest",
                },
                status=404,
            )
        login = {"login": user, "id": 4, "type": "User"}
        answer = {"permission": PERMISSIONS.get(role, role), "role_name": role, "user": login}
        return Reply.json(answer)

    def _user(self, repo: str, request: RecordedRequest, query: dict[str, str]) -> Reply:
        return Reply.json({"login": self.login, "id": 2, "type": "Bot"})

    def _graphql(self, repo: str, request: RecordedRequest, query: dict[str, str]) -> Reply:
        variables = request.json.get("variables") or {}
        repo = f"{variables.get('owner')}/{variables.get('name')}"
        if "reviewThreads" not in request.json.get("query", "") or not self._pull(
            repo, str(variables.get("number"))
        ):
            message = (
                f"Could not resolve to a PullRequest with the number of {variables.get('number')}."
            )
            return Reply.json({"data": None, "errors": [{"type": "NOT_FOUND", "message": message}]})
        roots = [
            c
            for c in self._review_comments.get((repo, int(variables["number"])), [])
            if "in_reply_to_id" not in c
        ]
        start = int(variables.get("after") or 0)
        page = roots[start : start + 100]
        nodes = [
            {
                "isResolved": (repo, c["id"]) in self._resolved,
                "isOutdated": c["line"] is None and c.get("subject_type") != "file",
                "comments": {"nodes": [{"databaseId": c["id"]}]},
            }
            for c in page
        ]
        more = start + 100 < len(roots)
        info = {"hasNextPage": more, "endCursor": str(start + 100) if more else None}
        threads = {"pageInfo": info, "nodes": nodes}
        return Reply.json({"data": {"repository": {"pullRequest": {"reviewThreads": threads}}}})

    # Helpers ----------------------------------------------------------------------------

    def _pull(self, repo: str, number: str) -> dict[str, Any] | None:
        item = self._items.get(repo, {}).get(int(number)) if number.isdigit() else None
        return item if item is not None and "head" in item else None

    def _new_review_comment(
        self,
        repo: str,
        number: int,
        body: str,
        author: str,
        path: str,
        line: int | None,
        reply_to: int | None,
    ) -> dict[str, Any]:
        self._ids += 1
        comments = self._review_comments.setdefault((repo, number), [])
        comment: dict[str, Any] = {
            "id": self._ids,
            "node_id": f"PRRC_{self._ids}",
            "pull_request_review_id": None,
            "path": path,
            "line": line,
            "original_line": line if line is not None else 1,
            "side": "RIGHT",
            "body": body,
            "user": {"login": author, "id": 5, "type": "User"},
            "created_at": f"2024-05-02T11:{len(comments) % 60:02d}:00Z",
            "html_url": f"https://github.com/{repo}/pull/{number}#discussion_r{self._ids}",
            "diff_hunk": "@@ -1,3 +1,3 @@",
            "commit_id": "0" * 40,
        }
        if reply_to is not None:
            comment["in_reply_to_id"] = reply_to
        comments.append(comment)
        return comment


def _repo(full_name: str) -> dict[str, Any]:
    return {"full_name": full_name, "name": full_name.partition("/")[2], "fork": True}


def _not_found() -> Reply:
    return Reply.json(
        {
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
            "status": "404",
        },
        status=404,
    )


def _invalid(resource: str, field: str) -> Reply:
    error = {"resource": resource, "field": field, "code": "missing_field"}
    return Reply.json(
        {
            "message": "Validation Failed",
            "errors": [error],
            "status": "422",
            "documentation_url": "https://docs.github.com/rest",
        },
        status=422,
    )
