"""A GitHub pull request's review discussion, and what a follow-up does with it: reply in a
thread, request review again; and who may ask for one (a collaborator's permission).

Review comments are threaded by their first comment (GitHub points every reply's
``in_reply_to_id`` there); whether a thread is resolved only GitHub's GraphQL API says, so
it is asked, and a thread stays unresolved when it cannot be (a warning, not an error).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from golem.core.errors import ForgeError, ForgeNotFound, ForgeRequestRejected
from golem.forge.contracts import IssueComment, PullRequest
from golem.forge.github_api import GitHubAPI
from golem.forge.refs import split_repo
from golem.forge.rest import segment
from golem.forge.reviews import Permission, Review, ReviewDiscussion, ReviewNote, ReviewThread

__all__ = ["issue_comment", "permission", "reply", "request_review", "review_discussion"]

log = logging.getLogger(__name__)

ReviewState = Literal["approved", "changes_requested", "commented", "dismissed"]
REVIEW_STATES: dict[str, ReviewState] = {
    "APPROVED": "approved",
    "CHANGES_REQUESTED": "changes_requested",
    "COMMENTED": "commented",
    "DISMISSED": "dismissed",
}
ROLES: dict[str, Permission] = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { isResolved isOutdated comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}
"""
MAX_THREAD_PAGES = 20


async def review_discussion(api: GitHubAPI, pr: PullRequest) -> ReviewDiscussion:
    """Reviews (pending ones left out), line comments as threads, and the conversation."""
    owner, name = split_repo(pr.repo)
    base, what = f"/repos/{owner}/{name}", f"{owner}/{name}#{pr.number}"
    reviews = await api.paginate(f"{base}/pulls/{pr.number}/reviews", f"the reviews of {what}")
    comments = await api.paginate(
        f"{base}/pulls/{pr.number}/comments", f"the review comments of {what}"
    )
    talk = await api.paginate(f"{base}/issues/{pr.number}/comments", f"the comments of {what}")
    threads = _threads(comments)
    if threads:
        await _mark_resolved(api, owner, name, pr.number, threads)
    return ReviewDiscussion(
        reviews=[_review(r) for r in reviews if r.get("state") in REVIEW_STATES],
        threads=threads,
        comments=[issue_comment(c) for c in talk],
    )


async def reply(api: GitHubAPI, pr: PullRequest, thread: str | None, body: str) -> None:
    """Reply in the thread whose first comment is ``thread``, or on the conversation."""
    owner, name = split_repo(pr.repo)
    what = f"{owner}/{name}#{pr.number}"
    if thread is None:
        path = f"/repos/{owner}/{name}/issues/{pr.number}/comments"
        await api.call("POST", path, f"a comment on {what}", json={"body": body})
        return
    if not thread.isdigit():
        raise ForgeRequestRejected(
            f"{thread!r} is not a GitHub review thread (the id of its first comment): "
            "reply with a thread id the review discussion gave"
        )
    path = f"/repos/{owner}/{name}/pulls/{pr.number}/comments/{thread}/replies"
    await api.call("POST", path, f"a reply in thread {thread} of {what}", json={"body": body})


async def request_review(api: GitHubAPI, pr: PullRequest, reviewers: Sequence[str]) -> None:
    """Ask ``reviewers`` to review again, leaving out the pull request's author (GitHub
    refuses to ask them); a refusal is logged, not raised: the pushed work stands."""
    owner, name = split_repo(pr.repo)
    what = f"{owner}/{name}#{pr.number}"
    data = await api.call("GET", f"/repos/{owner}/{name}/pulls/{pr.number}", f"pull request {what}")
    author = ((data.get("user") or {}).get("login") or "").lower()
    asked = list(dict.fromkeys(r for r in reviewers if r and r.lower() != author))
    if not asked:
        return
    path = f"/repos/{owner}/{name}/pulls/{pr.number}/requested_reviewers"
    try:
        await api.call("POST", path, f"a review request on {what}", json={"reviewers": asked})
    except ForgeRequestRejected as exc:
        log.warning("%s: review not requested again from %s: %s", what, ", ".join(asked), exc)


async def permission(api: GitHubAPI, repo: str, user: str) -> Permission:
    """``user``'s permission in ``repo``: GitHub's role (maintain counts as write, triage
    as read), or ``none`` for someone GitHub does not know there."""
    owner, name = split_repo(repo)
    path = f"/repos/{owner}/{name}/collaborators/{segment(user)}/permission"
    try:
        data = await api.call("GET", path, f"the permission of {user} in {owner}/{name}")
    except ForgeNotFound:
        return "none"
    role = ROLES.get(str(data.get("role_name") or ""))
    if role is not None:
        return role
    level = ROLES.get(str(data.get("permission") or ""))
    if level is None:
        raise ForgeError(
            f"GitHub named an unknown permission {data.get('permission')!r} for {user} in "
            f"{owner}/{name}; golem reads admin, maintain, write, triage, read or none"
        )
    return level


def _threads(comments: list[dict[str, Any]]) -> list[ReviewThread]:
    by_id = {int(c["id"]): c for c in comments}
    threads: dict[int, ReviewThread] = {}
    for comment in sorted(comments, key=lambda c: int(c["id"])):
        root = _root(comment, by_id)
        if root not in threads:
            first = by_id.get(root, comment)
            threads[root] = ReviewThread(
                id=str(root),
                path=first.get("path"),
                line=first.get("line") or first.get("original_line"),
                outdated=first.get("line") is None and first.get("subject_type") != "file",
            )
        threads[root].comments.append(_note(comment))
    return list(threads.values())


def _root(comment: dict[str, Any], by_id: dict[int, dict[str, Any]]) -> int:
    """The thread's first comment: GitHub points replies there, older data may chain."""
    current, seen = comment, set()
    while (parent := current.get("in_reply_to_id")) is not None and int(parent) not in seen:
        seen.add(int(parent))
        if int(parent) not in by_id:
            return int(parent)
        current = by_id[int(parent)]
    return int(current["id"])


async def _mark_resolved(
    api: GitHubAPI, owner: str, name: str, number: int, threads: list[ReviewThread]
) -> None:
    by_root = {thread.id: thread for thread in threads}
    variables: dict[str, Any] = {"owner": owner, "name": name, "number": number, "after": None}
    try:
        for _ in range(MAX_THREAD_PAGES):
            data = await api.graphql(
                THREADS_QUERY, variables, f"the review threads of {owner}/{name}#{number}"
            )
            pull = ((data or {}).get("repository") or {}).get("pullRequest") or {}
            page = pull.get("reviewThreads") or {}
            for node in page.get("nodes") or []:
                _mark(node, by_root)
            info = page.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                return
            variables["after"] = info.get("endCursor")
    except ForgeError as exc:
        log.warning(
            "%s/%s#%d: which review threads are resolved is unknown (all read as open): %s",
            owner,
            name,
            number,
            exc,
        )


def _mark(node: dict[str, Any], by_root: dict[str, ReviewThread]) -> None:
    firsts = (node.get("comments") or {}).get("nodes") or []
    if not firsts or firsts[0].get("databaseId") is None:
        return
    thread = by_root.get(str(firsts[0]["databaseId"]))
    if thread is not None:
        thread.resolved = bool(node.get("isResolved"))
        thread.outdated = bool(node.get("isOutdated")) or thread.outdated


def _note(comment: dict[str, Any]) -> ReviewNote:
    return ReviewNote(
        id=str(comment["id"]),
        author=(comment.get("user") or {}).get("login") or "",
        body=comment.get("body") or "",
        created=comment.get("created_at"),
    )


def _review(review: dict[str, Any]) -> Review:
    return Review(
        id=str(review["id"]),
        author=(review.get("user") or {}).get("login") or "",
        state=REVIEW_STATES[review["state"]],
        body=review.get("body") or "",
        submitted=review.get("submitted_at"),
    )


def issue_comment(comment: dict[str, Any]) -> IssueComment:
    """One comment of an issue's (or a pull request's) conversation."""
    return IssueComment(
        author=(comment.get("user") or {}).get("login") or "",
        body=comment.get("body") or "",
        created=comment.get("created_at"),
    )
