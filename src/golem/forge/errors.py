"""The forge layer's errors: git on the host and the forges' APIs, translated at the boundary.

GolemError
 +-- ForgeError                  a forge or git operation failed
      +-- GitError               a git command failed (its output, tokens masked, attached)
      |    +-- GitRemoteError    the remote cannot be reached, does not exist, or refused
      |    |                     the credentials (exit code 2)
      |    +-- GitPushRejected   the remote refused the push (not a fast-forward, a hook)
      |    +-- UnsafeRepository  the repository's own config would run commands on the host
      |    +-- RemoteRefused     the run's remote policy does not let git reach that remote
      +-- ForgeAuthError         the token is missing, refused, or lacks a permission
      +-- ForgeNotFound          no such repository, issue or pull request (or not visible)
      +-- ForgeRateLimited       the API's rate limit, still hit after waiting
      +-- ForgeUnavailable       cannot reach the API, or 5xx after every retry
      +-- ForgeRequestRejected   the API refused the request as invalid (422)
      |    +-- PullRequestExists one is already open for the branch (``existing`` has it)
      +-- IssueNotReadable       an issue reference or file golem cannot understand
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from golem.core.errors import GolemError

if TYPE_CHECKING:
    from golem.forge.contracts import PullRequest

__all__ = [
    "ForgeAuthError",
    "ForgeError",
    "ForgeNotFound",
    "ForgeRateLimited",
    "ForgeRequestRejected",
    "ForgeUnavailable",
    "GitError",
    "GitPushRejected",
    "GitRemoteError",
    "IssueNotReadable",
    "PullRequestExists",
    "RemoteRefused",
    "UnsafeRepository",
]


class ForgeError(GolemError):
    """A forge or git operation failed."""

    http_status = 502


class GitError(ForgeError):
    """A git command failed; ``command`` and ``output`` have every token masked."""

    http_status = 500

    def __init__(
        self, message: str, *, command: str = "", returncode: int | None = None, output: str = ""
    ) -> None:
        super().__init__(message)
        self.command = command
        self.returncode = returncode
        self.output = output


class GitRemoteError(GitError):
    """The remote cannot be reached, does not exist, or refused the credentials."""

    exit_code = 2
    http_status = 502


class GitPushRejected(GitError):
    """The remote refused the push: not a fast-forward, or a hook or rule said no."""

    http_status = 409


class UnsafeRepository(GitError):
    """The repository's own config names commands (hooks, filters, pagers...) that git
    would run on the host; the box can write that config, so golem refuses it."""

    exit_code = 2
    http_status = 422


class RemoteRefused(GitError):
    """The run's remote policy (a server role's ``repos``) does not let git reach that
    remote: its scheme, host, port or resolved address. ``rule`` is the policy field."""

    exit_code = 2
    http_status = 403

    def __init__(self, message: str, *, rule: str, resolved: bool = False) -> None:
        super().__init__(f"{message} (policy field repos.{rule})")
        self.reason = message
        self.rule = rule
        self.resolved = resolved
        """Whether the refusal came from looking the name up (it did not resolve, or to a
        refused address): such a refusal tells what the server's network holds."""


class ForgeAuthError(ForgeError):
    """The forge's token is missing, refused, or lacks a permission."""

    exit_code = 2
    http_status = 401


class ForgeNotFound(ForgeError):
    """No such repository, issue or pull request, or the token cannot see it."""

    exit_code = 2
    http_status = 404


class ForgeRateLimited(ForgeError):
    """The forge's rate limit was still hit after waiting as long as allowed."""

    http_status = 429


class ForgeUnavailable(ForgeError):
    """The forge could not be reached, or kept answering 5xx."""

    http_status = 503


class ForgeRequestRejected(ForgeError):
    """The forge refused the request as invalid (GitHub's 422 Validation Failed)."""

    exit_code = 2
    http_status = 422


class PullRequestExists(ForgeRequestRejected):
    """A pull request for the branch is already open; ``existing`` is it, when found."""

    http_status = 409

    def __init__(self, message: str, *, existing: PullRequest | None = None) -> None:
        super().__init__(message)
        self.existing = existing


class IssueNotReadable(ForgeError):
    """An issue reference, or a local issue file, that golem cannot understand."""

    exit_code = 2
    http_status = 422
