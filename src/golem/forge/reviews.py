"""A pull request's review discussion: reviews, threads of line comments (resolved or
not), and the conversation, as a follow-up run reads it; and who may ask for one."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from golem.forge.contracts import IssueComment

__all__ = [
    "Permission",
    "Review",
    "ReviewDiscussion",
    "ReviewNote",
    "ReviewThread",
    "may_write",
]

Permission = Literal["admin", "write", "read", "none"]
"""What a person may do in a repository: GitHub's collaborator permission (``maintain``
counts as write, ``triage`` as read); GitLab's access level (Maintainer and Owner admin,
Developer write, Reporter and Guest read)."""


def may_write(permission: Permission) -> bool:
    """Whether ``permission`` lets its holder push: who may start a follow-up run."""
    return permission in ("admin", "write")


class ReviewNote(BaseModel):
    """One comment of a review thread."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        description="The forge's id of the comment (GitHub review comment id, GitLab note id)."
    )
    author: str = ""
    body: str
    created: str | None = None


class ReviewThread(BaseModel):
    """A thread of comments on the change (on a line, or on the whole pull request where
    the forge threads those: GitLab's discussions)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        description="What a reply names: the first comment's id (GitHub), the "
        "discussion's id (GitLab)."
    )
    path: str | None = None
    line: int | None = None
    resolved: bool = False
    outdated: bool = Field(False, description="The lines it was on changed since.")
    comments: list[ReviewNote] = Field(default_factory=list)


class Review(BaseModel):
    """A review as submitted (GitHub), or an approval (GitLab)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    author: str = ""
    state: Literal["approved", "changes_requested", "commented", "dismissed"]
    body: str = ""
    submitted: str | None = None


class ReviewDiscussion(BaseModel):
    """Everything reviewers said on a pull request, oldest first."""

    model_config = ConfigDict(extra="forbid")

    reviews: list[Review] = Field(default_factory=list)
    threads: list[ReviewThread] = Field(default_factory=list)
    comments: list[IssueComment] = Field(
        default_factory=list,
        description="The conversation not on any line (GitHub's issue "
        "comments of the PR; GitLab's notes outside threads).",
    )

    def reviewers(self) -> list[str]:
        """Everyone who reviewed or commented on a line, in order of first appearance."""
        seen: list[str] = []
        names = [r.author for r in self.reviews] + [
            note.author for thread in self.threads for note in thread.comments
        ]
        for name in names:
            if name and name not in seen:
                seen.append(name)
        return seen
