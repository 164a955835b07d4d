"""A GitLab merge request's review discussion: its discussions (threads on lines or on the
whole change, resolved or not; a plain note is a discussion of one ``individual_note``)
its approvals and its reviewers' states (GitLab's "Request changes"), as golem's
``ReviewDiscussion``. GitLab's system notes ("added 1
commit", "requested review from ...") are left out."""

from __future__ import annotations

from typing import Any, Literal

from golem.core.errors import ForgeAuthError, ForgeNotFound
from golem.forge.contracts import IssueComment, PullRequest
from golem.forge.gitlab_api import GitLabAPI
from golem.forge.reviews import Review, ReviewDiscussion, ReviewNote, ReviewThread

__all__ = ["note_comment", "read_review_discussion"]


async def read_review_discussion(api: GitLabAPI, path: str, pr: PullRequest) -> ReviewDiscussion:
    """The discussion of the merge request at API ``path`` (``/projects/ID/merge_requests/N``)."""
    what = f"{pr.repo}!{pr.number}"
    discussions = await api.paginate(f"{path}/discussions", f"the discussions of {what}")
    threads: list[ReviewThread] = []
    comments: list[IssueComment] = []
    for discussion in discussions:
        notes = [note for note in discussion.get("notes") or [] if not note.get("system")]
        if not notes:
            continue
        if discussion.get("individual_note"):
            comments += [note_comment(note) for note in notes]
        else:
            threads.append(_thread(str(discussion["id"]), notes))
    return ReviewDiscussion(
        reviews=await _approvals(api, path, what), threads=threads, comments=comments
    )


REVIEWER_STATES: dict[str, Literal["changes_requested", "commented"]] = {
    "requested_changes": "changes_requested",
    "reviewed": "commented",
}
"""A reviewer's state (``GET .../reviewers``) that is a review: GitLab's "Request changes"
and a submitted review; approvals come from ``.../approvals``."""


async def _approvals(api: GitLabAPI, path: str, what: str) -> list[Review]:
    try:
        data = await api.call("GET", f"{path}/approvals", f"the approvals of {what}")
    except (ForgeNotFound, ForgeAuthError):  # approvals switched off, or not in this tier
        data = {}
    reviews = []
    for approval in (data or {}).get("approved_by") or []:
        user = approval.get("user") or {}
        name = str(user.get("username") or "")
        reviews.append(Review(id=f"approval-{user.get('id', name)}", author=name, state="approved"))
    return reviews + await _reviewer_states(api, path, what)


async def _reviewer_states(api: GitLabAPI, path: str, what: str) -> list[Review]:
    try:
        reviewers = await api.paginate(f"{path}/reviewers", f"the reviewers of {what}")
    except ForgeNotFound:  # a GitLab older than 15.3
        return []
    reviews = []
    for reviewer in reviewers:
        state = REVIEWER_STATES.get(str(reviewer.get("state")))
        user = reviewer.get("user") or {}
        name = str(user.get("username") or "")
        if state is not None:
            identifier = f"reviewer-{user.get('id', name)}"
            when = reviewer.get("created_at")
            reviews.append(Review(id=identifier, author=name, state=state, submitted=when))
    return reviews


def _thread(identifier: str, notes: list[Any]) -> ReviewThread:
    first = notes[0]
    position = first.get("position") or {}
    resolvable = [note for note in notes if note.get("resolvable")]
    return ReviewThread(
        id=identifier,
        path=position.get("new_path") or position.get("old_path"),
        line=position.get("new_line") or position.get("old_line"),
        resolved=bool(resolvable) and all(note.get("resolved") for note in resolvable),
        comments=[_note(note) for note in notes],
    )


def _note(note: Any) -> ReviewNote:
    author = note.get("author") or {}
    return ReviewNote(
        id=str(note["id"]),
        author=author.get("username") or "",
        body=note.get("body") or "",
        created=note.get("created_at"),
    )


def note_comment(note: Any) -> IssueComment:
    """A GitLab note as one comment of a conversation."""
    author = note.get("author") or {}
    return IssueComment(
        author=author.get("username") or "",
        body=note.get("body") or "",
        created=note.get("created_at"),
    )
