"""golem.forge: git on the host, and the forges issues come from and pull requests go to."""

from golem.forge.contracts import (
    CheckResult,
    Forge,
    Issue,
    IssueComment,
    PullRequest,
    PullRequestDraft,
    PullRequestStore,
)

__all__ = [
    "CheckResult",
    "Forge",
    "Issue",
    "IssueComment",
    "PullRequest",
    "PullRequestDraft",
    "PullRequestStore",
]
