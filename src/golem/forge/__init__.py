"""golem.forge: git on the host, and the forges issues come from and pull requests go to."""

from golem.forge.auth import GitAuth
from golem.forge.contracts import (
    CheckResult,
    Forge,
    ForgeComment,
    Issue,
    IssueComment,
    PullRequest,
    PullRequestDraft,
    PullRequestStore,
)
from golem.forge.diffstat import DiffStat, FileChange
from golem.forge.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeRequestRejected,
    ForgeUnavailable,
    GitError,
    GitPushRejected,
    GitRemoteError,
    IssueNotReadable,
    PullRequestExists,
    UnsafeRepository,
)
from golem.forge.git import GitRepo

__all__ = [
    "CheckResult",
    "DiffStat",
    "FileChange",
    "Forge",
    "ForgeAuthError",
    "ForgeComment",
    "ForgeError",
    "ForgeNotFound",
    "ForgeRateLimited",
    "ForgeRequestRejected",
    "ForgeUnavailable",
    "GitAuth",
    "GitError",
    "GitPushRejected",
    "GitRemoteError",
    "GitRepo",
    "Issue",
    "IssueComment",
    "IssueNotReadable",
    "PullRequest",
    "PullRequestDraft",
    "PullRequestExists",
    "PullRequestStore",
    "UnsafeRepository",
]
