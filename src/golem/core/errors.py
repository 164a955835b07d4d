"""The one error hierarchy of golem; every message says what the user can do next.

GolemError
 +-- ConfigError                 bad option, file or environment variable (exit code 2)
 +-- SandboxError
 |    +-- BackendUnavailable     bubblewrap or a kernel feature is missing
 |    +-- ImageNotFound          the image (or image directory) does not exist
 |    +-- RuntimeNotAvailable    the image lacks the interpreter a request needs
 |    +-- InvalidRequest         a request that cannot run (bad workdir, cmd and code...)
 |    +-- SetupFailed            the session's setup script failed
 |    +-- SessionNotFound        no live box with that id
 |    +-- BoxCrashed             the box (or its supervisor) went away mid-call
 |    +-- ProtocolError          the supervisor spoke something unexpected
 |    +-- UnsafeBoxOutput        what a box handed back breaks a rule of the trust boundary
 +-- ExecTimeout (also TimeoutError)   a file transfer or call exceeded its time
 +-- ModelError                  a model provider gave no usable answer (after retries)
      +-- ModelUnavailable       cannot reach the provider, or 5xx/overloaded after retries
      +-- ModelRateLimited       429 after retries
      +-- ModelAuthError         the API key is missing or refused (401/403)
      +-- ModelRequestRejected   the provider refused the request as invalid (400/404/422)
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "BoxCrashed",
    "ConfigError",
    "ExecTimeout",
    "GolemError",
    "ImageNotFound",
    "InvalidRequest",
    "ModelAuthError",
    "ModelError",
    "ModelRateLimited",
    "ModelRequestRejected",
    "ModelUnavailable",
    "PathNotFound",
    "PathRefused",
    "ProtocolError",
    "RuntimeNotAvailable",
    "SandboxError",
    "SessionNotFound",
    "SetupFailed",
    "UnsafeBoxOutput",
]


class GolemError(Exception):
    """Root of every error golem raises on purpose.

    ``exit_code`` is what the CLI exits with; ``http_status`` what the API answers.
    """

    exit_code: int = 1
    http_status: int = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(GolemError):
    """An option, config file or environment variable is invalid."""

    exit_code = 2
    http_status = 422


class SandboxError(GolemError):
    """Something about a box failed."""


class BackendUnavailable(SandboxError):
    """The backend cannot run on this machine (a tool or kernel feature is missing)."""

    exit_code = 2
    http_status = 503


class ImageNotFound(SandboxError):
    """The requested image does not exist."""

    exit_code = 2
    http_status = 404


class RuntimeNotAvailable(SandboxError):
    """The image lacks the interpreter that the request needs."""

    exit_code = 2
    http_status = 422


class InvalidRequest(SandboxError):
    """A request that cannot run as given."""

    exit_code = 2
    http_status = 422


class SetupFailed(SandboxError):
    """The session's setup script exited non-zero."""

    http_status = 424

    def __init__(self, message: str, *, exit_code: int | None = None, output: str = "") -> None:
        super().__init__(message)
        self.script_exit_code = exit_code
        self.output = output


class PathNotFound(SandboxError):
    """A path asked for in a box does not exist there."""

    exit_code = 2
    http_status = 404


class PathRefused(SandboxError):
    """The box refused a path: a directory where a file was meant, no permission, ..."""

    exit_code = 2
    http_status = 422


class SessionNotFound(SandboxError):
    """No live box has that id."""

    exit_code = 2
    http_status = 404


class BoxCrashed(SandboxError):
    """The box or its supervisor went away while a call was running."""


class ProtocolError(SandboxError):
    """The supervisor sent something the client does not understand."""


class UnsafeBoxOutput(SandboxError):
    """What a box handed back to the host breaks a rule of the trust boundary (a ``.git``
    path, a link out of the tree, a device, a setuid file, a size over its cap, ...).

    ``rule`` names the rule (``takeback.git``, ``takeback.size``, ...; docs/security.md
    lists them); ``path`` is the offending path as the box named it."""

    http_status = 422

    def __init__(self, path: str, reason: str, rule: str) -> None:
        shown = path if len(path) <= 200 else path[:200] + "..."
        super().__init__(
            f"golem refused what the box handed back: {shown!r}: {reason} (rule {rule}; "
            "see docs/security.md)"
        )
        self.path = path
        self.rule = rule


class ExecTimeout(GolemError, TimeoutError):
    """An operation on a box took longer than allowed."""

    http_status = 504


class ModelError(GolemError):
    """A model provider gave no usable answer."""

    http_status = 502


class ModelUnavailable(ModelError):
    """The provider could not be reached, or kept failing (5xx, overloaded)."""

    http_status = 503


class ModelRateLimited(ModelError):
    """The provider kept answering 429 after every retry."""

    http_status = 429


class ModelAuthError(ModelError):
    """The provider refused the API key, or none was found."""

    exit_code = 2
    http_status = 401


class ModelRequestRejected(ModelError):
    """The provider refused the request itself (bad parameters, unknown model)."""

    exit_code = 2
    http_status = 422
