"""What a forge hands golem and takes from it: issues, their comments, pull requests.

The ``Forge`` protocol that reads and writes them is ``golem.forge.protocol``.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from golem.core.check_results import CheckResult

__all__ = [
    "ForgeComment",
    "Issue",
    "IssueComment",
    "MergedPullRequest",
    "PullRequest",
    "PullRequestDraft",
]


class IssueComment(BaseModel):
    """One comment of an issue's discussion."""

    model_config = ConfigDict(extra="forbid")

    author: str = ""
    body: str
    created: str | None = None


class Issue(BaseModel):
    """A task as a forge (or a local file) states it."""

    model_config = ConfigDict(extra="forbid")

    title: str
    body: str = ""
    author: str = Field("", description="Who opened it, as the forge names them.")
    comments: list[IssueComment] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    url: str | None = None
    number: int | None = None
    repo: str | None = Field(None, description="owner/name on its forge, when known.")
    pull_request: bool = Field(
        False,
        description="It is a pull (merge) request's discussion: GitLab numbers those apart "
        "from issues, so a comment on it goes elsewhere.",
    )


class PullRequestDraft(BaseModel):
    """What golem asks a forge to open."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(description="owner/name (GitHub), or the repository's path or URL.")
    base: str
    head: str = Field(description="The pushed branch.")
    title: str
    body: str
    draft: bool = False
    labels: list[str] = Field(default_factory=list)
    issue: int | None = Field(None, description="The issue it resolves, if any.")


class PullRequest(BaseModel):
    """A pull request as opened."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    number: int
    url: str
    repo: str
    base: str
    head: str
    title: str
    body: str
    draft: bool = False
    labels: list[str] = Field(default_factory=list)
    created: float = Field(default_factory=time.time)
    diff: str = Field("", description="Kept by the local forge; empty elsewhere.")
    checks: list[CheckResult] = Field(default_factory=list)
    issue: int | None = Field(None, description="The issue it resolves, if any.")
    head_commit: str | None = Field(None, description="The head branch's commit, when read.")
    fork: bool = Field(
        False, description="Its head branch is in another repository (golem cannot push there)."
    )

    def as_issue(self) -> Issue:
        """The pull request as an issue, to ``Forge.comment`` on it (a pull request's
        discussion is an issue's, on GitHub and in the local forge alike)."""
        return Issue(
            title=self.title,
            body=self.body,
            url=self.url,
            number=self.number,
            repo=self.repo,
            pull_request=True,
        )


class MergedPullRequest(BaseModel):
    """A pull (merge) request that was merged: what it asked, and the commit it became."""

    model_config = ConfigDict(extra="forbid")

    number: int
    title: str
    body: str = ""
    url: str | None = None
    merge_commit: str = Field(description="The merge (or squashed) commit on its base branch.")
    merged_at: str = Field("", description="When, as the forge writes it (ISO 8601).")
    closes: list[int] = Field(
        default_factory=list, description="The issues of its repository its text closes."
    )


class ForgeComment(BaseModel):
    """A comment golem made, as the local forge keeps it."""

    model_config = ConfigDict(extra="forbid")

    target: str = Field(
        description="What it is on: ``repo#number`` when the issue has both, else its url."
    )
    body: str
    created: float = Field(default_factory=time.time)
