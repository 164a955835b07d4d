"""golem.forge: git on the host, and the forges issues come from and pull requests go to.

``make_forge`` chooses a forge (``github``, ``gitlab`` or ``local``, whose records are kept in
golem's store: ``golem.store.MemoryStore`` for tests and demos); ``GitRepo`` runs git on
the host.
"""

from typing import TYPE_CHECKING

from golem.forge.auth import ForgeCredentials, GitAuth, GitLogin, git_auth
from golem.forge.config import ForgeConfig, GitHubConfig, GitLabConfig
from golem.forge.contracts import (
    ForgeComment,
    Issue,
    IssueComment,
    MergedPullRequest,
    PullRequest,
    PullRequestDraft,
)
from golem.forge.diffstat import DiffStat, FileChange
from golem.forge.factory import make_forge
from golem.forge.git import GitRepo
from golem.forge.gitcmd import git_environment, refused_credentials, run_git_blocking
from golem.forge.local import LocalForge
from golem.forge.protocol import Forge
from golem.forge.refs import (
    IssueRef,
    closed_issues,
    is_project_path,
    is_repo_name,
    parse_gitlab_ref,
    parse_issue_ref,
)
from golem.forge.remotes import pin_remote
from golem.forge.reviews import ReviewDiscussion

if TYPE_CHECKING:
    from golem.forge.github import GitHubForge
    from golem.forge.gitlab import GitLabForge

__all__ = [
    "DiffStat",
    "FileChange",
    "Forge",
    "ForgeComment",
    "ForgeConfig",
    "ForgeCredentials",
    "GitAuth",
    "GitHubConfig",
    "GitHubForge",
    "GitLabConfig",
    "GitLabForge",
    "GitLogin",
    "GitRepo",
    "Issue",
    "IssueComment",
    "IssueRef",
    "LocalForge",
    "MergedPullRequest",
    "PullRequest",
    "PullRequestDraft",
    "ReviewDiscussion",
    "closed_issues",
    "git_auth",
    "git_environment",
    "is_project_path",
    "is_repo_name",
    "make_forge",
    "parse_gitlab_ref",
    "parse_issue_ref",
    "pin_remote",
    "refused_credentials",
    "run_git_blocking",
]


def __getattr__(name: str) -> object:
    """GitHubForge and GitLabForge, imported when first asked for (they bring httpx)."""
    if name == "GitHubForge":
        from golem.forge.github import GitHubForge  # noqa: PLC0415

        return GitHubForge
    if name == "GitLabForge":
        from golem.forge.gitlab import GitLabForge  # noqa: PLC0415

        return GitLabForge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
