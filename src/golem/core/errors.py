"""Every error golem raises on purpose, and the exceptions it uses for control flow.

Each class's ``exit_code`` is what the CLI exits with, ``http_status`` what the API
answers; every message says what the user can do next.

GolemError
 +-- ConfigError                 bad option, file or environment variable (exit code 2)
 +-- SandboxError
 |    +-- BackendUnavailable     bubblewrap or a kernel feature is missing
 |    |    +-- NoNodeFits        no node of the Ray cluster can run the box (labels, slots)
 |    |    +-- NoTierBackend     no backend serves the isolation tier a box needs here
 |    +-- ImageNotFound          the image (or image directory) does not exist
 |    +-- RuntimeNotAvailable    the image lacks the interpreter a request needs
 |    +-- InvalidRequest         a request that cannot run (bad workdir, cmd and code...)
 |    +-- SetupFailed            the session's setup script failed
 |    +-- PathNotFound           a path asked for in a box does not exist there
 |    +-- PathRefused            the box refused a path (a directory, no permission...)
 |    +-- BoxDiskFull            the box's file system has no room for what is written
 |    +-- SessionNotFound        no live box with that id
 |    |    +-- BoxEnded          the session's box ended by itself (reaped, killed, lost)
 |    +-- ProcessNotFound        no background process with that id in the box
 |    +-- BoxCrashed             the box (or its supervisor) went away mid-call
 |    +-- ProtocolError          the supervisor spoke something unexpected
 |    +-- UnsafeBoxOutput        what a box handed back breaks a rule of the trust boundary
 |    +-- DependenciesGone       a run's installed dependencies left the cache before its box
 |    +-- SnapshotNotFound       no snapshot of that name (or digest) for the box's tenant
 |    +-- SnapshotUnsupported    the box's backend (or its spec) cannot be snapshotted yet
 +-- ExecTimeout (also TimeoutError)   a file transfer or call exceeded its time
 +-- ModelError                  a model provider gave no usable answer (after retries)
 |    +-- ModelUnavailable       cannot reach the provider, or 5xx/overloaded after retries
 |    +-- ModelRateLimited       429 after retries
 |    +-- ModelAuthError         the API key is missing or refused (401/403)
 |    +-- ModelRequestRejected   the provider refused the request as invalid (400/404/422)
 +-- ToolProblem                 a tool call the model can correct (shown to it, not raised)
 +-- ForgeError                  a forge or git operation failed
 |    +-- GitError               a git command failed (its output, tokens masked, attached)
 |    |    +-- GitRemoteError    the remote cannot be reached, does not exist, or refused
 |    |    +-- GitPushRejected   the remote refused the push (not a fast-forward, a hook)
 |    |    +-- UnsafeRepository  the repository's own config would run commands on the host
 |    |    +-- RemoteRefused     the run's remote policy does not let git reach that remote
 |    +-- ForgeAuthError         the token is missing, refused, or lacks a permission
 |    |    +-- ForgeCredentialsRefused  no token can be minted (an App's key, a refresh token)
 |    +-- ForgeNotFound          no such repository, issue or pull request (or not visible)
 |    +-- ForgeRateLimited       the API's rate limit, still hit after waiting
 |    +-- ForgeUnavailable       cannot reach the API, or 5xx after every retry
 |    +-- ForgeRequestRejected   the API refused the request as invalid (422)
 |    |    +-- PullRequestExists one is already open for the branch
 |    +-- IssueNotReadable       an issue reference or file golem cannot understand
 +-- TrackerError                a tracker's API (Linear's) failed or refused
 +-- SecretInChange              a change to be pushed holds a secret's value
 +-- NotVerified                 no check verified a change (a blueprint's when_unverified: fail)
 +-- EvalError                   an evaluation cannot go on (its results directory, a task)
 |    +-- TaskFileError          a task file (or one of its lines) golem cannot use
 +-- StoreError                  the database failed or refused
 |    +-- StoreUnavailable       the database cannot be reached or did not answer in time
 |    +-- RunNotFound            no such run (for this tenant)
 |    +-- CredentialsKeyError    the key sealing forge tokens is missing or wrong
 +-- RunConflict                 the run's state does not allow that (ended, gate answered)
 |    +-- RunTaken               the run was claimed again: this runner's writes are refused
 |    +-- DuplicateDelivery      a webhook delivery started a run already (that run is named)
 |    +-- StatusMoveRefused      a run cannot move from its status to that one (a golem bug)
 +-- NameRefused                 a name bound for a forge's URL path is not one (its field named)
 +-- PolicyViolation             a server key's role does not allow the request
 +-- QueueFull                   the server takes no more runs now (retry later)
 +-- MissingForgeToken           a run needs a forge token its tenant does not have
 +-- SlackError                  Slack's Web API failed, refused a call or cannot be reached
 +-- Problem                     an error the API itself raises, with its status
 +-- RemoteError                 a server refused or failed, and said why
      +-- MalformedFrame         a call channel's frame is none of the protocol's

Interrupt                        control flow: caught inside golem, never an error shown
 +-- BudgetSpent                 a budget (an agent's, a run's) has nothing left
 +-- ProviderDown                a run's model provider stays down: the run pauses, resumes later
 +-- EgressRefused               the egress proxy refuses a destination (answered 403/502)
 +-- Unmaskable                  a brokered answer the proxy cannot mask (never forwarded)
 +-- BadMessage                  a WebSocket client's message the server cannot take

The in-box code (the supervisor, the agent's in-box tools) cannot import golem and keeps
its own few exceptions; they never leave the box as exceptions.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "BadMessage",
    "BoxCrashed",
    "BoxDiskFull",
    "BoxEnded",
    "BudgetSpent",
    "ConfigError",
    "CredentialsKeyError",
    "DuplicateDelivery",
    "EgressRefused",
    "EvalError",
    "ExecTimeout",
    "ForgeAuthError",
    "ForgeCredentialsRefused",
    "ForgeError",
    "ForgeNotFound",
    "ForgeRateLimited",
    "ForgeRequestRejected",
    "ForgeUnavailable",
    "GitError",
    "GitPushRejected",
    "GitRemoteError",
    "GolemError",
    "ImageNotFound",
    "Interrupt",
    "InvalidRequest",
    "IssueNotReadable",
    "MalformedFrame",
    "MissingForgeToken",
    "ModelAuthError",
    "ModelError",
    "ModelRateLimited",
    "ModelRequestRejected",
    "ModelUnavailable",
    "NameRefused",
    "NoTierBackend",
    "NodeLost",
    "NotVerified",
    "PathNotFound",
    "PathRefused",
    "PolicyViolation",
    "Problem",
    "ProcessNotFound",
    "ProtocolError",
    "ProviderDown",
    "PullRequestExists",
    "QueueFull",
    "RemoteError",
    "RemoteRefused",
    "RunConflict",
    "RunNotFound",
    "RunTaken",
    "RuntimeNotAvailable",
    "SandboxError",
    "SecretInChange",
    "SessionNotFound",
    "SetupFailed",
    "SlackError",
    "SnapshotNotFound",
    "SnapshotUnsupported",
    "StatusMoveRefused",
    "StoreError",
    "StoreUnavailable",
    "TaskFileError",
    "ToolProblem",
    "ToolshedError",
    "TrackerError",
    "UnsafeBoxOutput",
    "UnsafeRepository",
]


class GolemError(Exception):
    """Root of every error golem raises on purpose."""

    exit_code: int = 1
    http_status: int = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(GolemError):
    """An option, config file or environment variable is invalid."""

    exit_code, http_status = 2, 422


# --- boxes -----------------------------------------------------------------------------


class SandboxError(GolemError):
    """Something about a box failed."""


class BackendUnavailable(SandboxError):
    """The backend cannot run on this machine (a tool or kernel feature is missing)."""

    exit_code, http_status = 2, 503


class NoNodeFits(BackendUnavailable):
    """No node of the Ray cluster can run the box: none has the backend, trust tier or
    image it needs (node labels) with box slots; start one (``ray start --labels``, see
    docs/cluster.md) or ask for what the nodes have."""


class NoTierBackend(BackendUnavailable):
    """No backend of this host serves the isolation tier a box needs, nor a stronger one:
    configure one (``[engine.tiers.<tier>]``, docs/sandbox.md)."""


class ImageNotFound(SandboxError):
    """The requested image does not exist."""

    exit_code, http_status = 2, 404


class RuntimeNotAvailable(SandboxError):
    """The image lacks the interpreter that the request needs."""

    exit_code, http_status = 2, 422


class InvalidRequest(SandboxError):
    """A request that cannot run as given."""

    exit_code, http_status = 2, 422


class SetupFailed(SandboxError):
    """The session's setup script exited non-zero."""

    http_status = 424

    def __init__(self, message: str, *, exit_code: int | None = None, output: str = "") -> None:
        super().__init__(message)
        self.script_exit_code = exit_code
        self.output = output


class PathNotFound(SandboxError):
    """A path asked for in a box does not exist there."""

    exit_code, http_status = 2, 404


class PathRefused(SandboxError):
    """The box refused a path: a directory where a file was meant, no permission, ..."""

    exit_code, http_status = 2, 422


class BoxDiskFull(SandboxError):
    """The box's file system (its /workspace, /tmp) has no room left for a write: 413, as
    for a body too large for the space it must fit in."""

    exit_code, http_status = 2, 413


class SessionNotFound(SandboxError):
    """No live box has that id."""

    exit_code, http_status = 2, 404


class BoxEnded(SessionNotFound):
    """The session's box ended by itself (reaped at its age limit, its supervisor killed,
    its container removed): the session is gone; start a new one."""

    exit_code, http_status = 1, 410


class NodeLost(BoxEnded):
    """The cluster node that held the session's box is gone (its Ray node died or left):
    the session ended with it; start a new one (Ray places it on a live node)."""


class ProcessNotFound(SandboxError):
    """The box has no background process with that id (never started, or forgotten)."""

    exit_code, http_status = 2, 404


class BoxCrashed(SandboxError):
    """The box or its supervisor went away while a call was running."""

    http_status = 410


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


class DependenciesGone(SandboxError):
    """A run's installed dependencies are no longer in the cache when its box is made."""

    http_status = 409


class SnapshotNotFound(SandboxError):
    """No snapshot of that name or digest belongs to the box's tenant (another tenant's is
    never found): see ``golem snapshots ls``."""

    exit_code, http_status = 2, 404


class SnapshotUnsupported(SandboxError):
    """The box cannot be snapshotted, or started from a snapshot, as it is: its backend
    has no snapshots yet, or its state is not all the box's own (a host workspace, a
    writable root). The message names what can."""

    exit_code, http_status = 2, 422


class ExecTimeout(GolemError, TimeoutError):
    """An operation on a box took longer than allowed."""

    http_status = 504


# --- models and tools ------------------------------------------------------------------


class ModelError(GolemError):
    """A model provider gave no usable answer. ``back_at`` (epoch seconds): when the
    provider said it expects to answer again (retry-after, a rate limit's reset), if it
    said; only a passing failure (ModelUnavailable, ModelRateLimited) has one."""

    http_status = 502

    def __init__(self, message: str, *, back_at: float | None = None) -> None:
        super().__init__(message)
        self.back_at = back_at


class ModelUnavailable(ModelError):
    """The provider could not be reached, or kept failing (5xx, overloaded)."""

    http_status = 503


class ModelRateLimited(ModelError):
    """The provider kept answering 429 after every retry."""

    http_status = 429


class ModelAuthError(ModelError):
    """The provider refused the API key, or none was found."""

    exit_code, http_status = 2, 401


class ModelRequestRejected(ModelError):
    """The provider refused the request itself (bad parameters, unknown model)."""

    exit_code, http_status = 2, 422


class ToolProblem(GolemError):
    """A problem the model can fix (a missing file, an ambiguous edit, a bad pattern).

    Raised inside a tool; the tool turns it into an ``is_error`` result for the model."""


class ToolshedError(GolemError):
    """A toolshed server cannot give a step its tools: it does not start, its host is
    refused, or a step's pattern matches none of its tools."""

    exit_code, http_status = 2, 422


# --- forges and host git ---------------------------------------------------------------


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

    exit_code, http_status = 2, 502


class GitPushRejected(GitError):
    """The remote refused the push: not a fast-forward, or a hook or rule said no."""

    http_status = 409


class UnsafeRepository(GitError):
    """The repository's own config names commands (hooks, filters, pagers...) that git
    would run on the host; the box can write that config, so golem refuses it."""

    exit_code, http_status = 2, 422


class RemoteRefused(GitError):
    """The run's remote policy (a server role's ``repos``) does not let git reach that
    remote: its scheme, host, port or resolved address. ``rule`` is the policy field."""

    exit_code, http_status = 2, 403

    def __init__(self, message: str, *, rule: str, resolved: bool = False) -> None:
        super().__init__(f"{message} (policy field repos.{rule})")
        self.reason = message
        self.rule = rule
        self.resolved = resolved
        """Whether the refusal came from looking the name up (it did not resolve, or to a
        refused address): such a refusal tells what the server's network holds."""


class ForgeAuthError(ForgeError):
    """The forge's token is missing, refused, or lacks a permission."""

    exit_code, http_status = 2, 401


class ForgeCredentialsRefused(ForgeAuthError):
    """No fresh token can be minted: a GitHub App's key or installation, or a GitLab
    refresh token or OAuth application, was refused. Waiting does not help; new
    credentials do."""


class ForgeNotFound(ForgeError):
    """No such repository, issue or pull request, or the token cannot see it."""

    exit_code, http_status = 2, 404


class ForgeRateLimited(ForgeError):
    """The forge's rate limit was still hit after waiting as long as allowed."""

    http_status = 429


class ForgeUnavailable(ForgeError):
    """The forge could not be reached, or kept answering 5xx."""

    http_status = 503


class ForgeRequestRejected(ForgeError):
    """The forge refused the request as invalid (GitHub's 422 Validation Failed)."""

    exit_code, http_status = 2, 422


class PullRequestExists(ForgeRequestRejected):
    """A pull request for the branch is already open; ``url`` is its address, when found."""

    http_status = 409

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class IssueNotReadable(ForgeError):
    """An issue reference, or a local issue file, that golem cannot understand."""

    exit_code, http_status = 2, 422


class TrackerError(GolemError):
    """A tracker's API (Linear's GraphQL) could not be reached, or refused what golem asked
    (a bad token, a missing scope, an object it does not know)."""

    http_status = 502


class SecretInChange(GolemError):
    """The committed change holds a secret's value: it is not pushed."""

    exit_code, http_status = 2, 422


class NotVerified(GolemError):
    """No check verified the change, and the blueprint fails such a run: add checks to the
    repository's .golem.toml, or let the loop's ``when_unverified`` open a draft."""


class EvalError(GolemError):
    """An evaluation (``golem eval``) cannot go on: a results directory made with other
    settings, a task whose repository or environment cannot be had."""

    exit_code, http_status = 2, 422


class TaskFileError(EvalError):
    """A task file (JSONL or JSON) golem cannot use: the message names the file, the line
    and the field."""


# --- the store and the server ----------------------------------------------------------


class StoreError(GolemError):
    """The database failed or refused."""

    http_status = 503


class StoreUnavailable(StoreError):
    """The database cannot be reached, or did not answer within the store's timeout
    (``database_timeout``); the request may be tried again after ``retry_after`` seconds."""

    exit_code, http_status = 75, 503

    def __init__(self, message: str, *, retry_after: int = 5) -> None:
        super().__init__(f"{message}; try again in {retry_after}s")
        self.headers = {"Retry-After": str(retry_after)}


class RunNotFound(StoreError):
    """No such run (for this tenant)."""

    exit_code, http_status = 2, 404


class CredentialsKeyError(StoreError):
    """The key that seals forge tokens is missing, malformed, unsafe or not theirs."""

    http_status = 503


class RunConflict(GolemError):
    """The run is not in a state that allows this (it ended; its gate was answered)."""

    exit_code, http_status = 2, 409


class RunTaken(RunConflict):
    """The run was claimed again (or queued again) since this writer read it: its runner
    is another now (its machine was declared dead, its server's runs were recovered), and
    what this one still had to write is refused so that it cannot write over that one."""


class StatusMoveRefused(RunConflict):
    """A run was asked to move from its status to one the lifecycle does not allow
    (``golem.blueprint.lifecycle``): a bug in golem; report it with the run's id."""


class DuplicateDelivery(RunConflict):
    """A forge's webhook delivery (by one of its ids) started run ``run_id`` already: a
    redelivery or a retry, to this server or to another one of the store."""

    def __init__(self, run_id: str, delivery: str) -> None:
        super().__init__(f"delivery {delivery} started run {run_id} already: nothing new starts")
        self.run_id = run_id


class PendingTaken(RunConflict):
    """A pending request was started (or replaced) already, by this server or another one
    of the store: the run that would answer it again starts nothing."""

    def __init__(self, thread: str, person: str) -> None:
        super().__init__(
            f"{person}'s pending request in {thread} was started or replaced already: "
            "nothing new starts"
        )


class NameRefused(GolemError):
    """A name that would go into a forge's URL path (a repository, a project path, an issue
    reference, a branch, a login, a thread, a number) is not one; ``field`` names where it
    came from. Refused where it enters the server, before any forge call."""

    exit_code, http_status = 2, 422

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class PolicyViolation(GolemError):
    """The key's role does not allow what the request asks for."""

    exit_code, http_status = 2, 403


class QueueFull(GolemError):
    """The server takes no more runs now; try again after ``retry_after`` seconds."""

    exit_code, http_status = 75, 429

    def __init__(self, reason: str, *, retry_after: int) -> None:
        super().__init__(f"the server is full: {reason}; try again in {retry_after}s")
        self.reason = reason
        self.headers = {"Retry-After": str(retry_after)}


class MissingForgeToken(GolemError):
    """A run (or the GitHub trigger) needs a forge token its tenant does not have."""

    exit_code, http_status = 2, 409


class SlackError(GolemError):
    """Slack's Web API refused a call (``error`` is its code: ``channel_not_found``,
    ``not_in_channel``, ``invalid_auth``...) or could not be reached."""

    http_status = 502

    def __init__(self, message: str, *, error: str = "") -> None:
        super().__init__(message)
        self.error = error


class Problem(GolemError):
    """An error the API itself raises, with its status (401, 404, 429, ...)."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.http_status = status
        self.headers = headers or {}


class RemoteError(GolemError):
    """A golem server refused or failed, and said why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status


class MalformedFrame(RemoteError):
    """A frame on a session's call channel is none of the protocol's
    (``golem.sandbox.remote.frames``): the other end speaks another version of it, or is
    no golem server."""

    def __init__(self, message: str) -> None:
        super().__init__(502, message)


# --- control flow ----------------------------------------------------------------------


class Interrupt(Exception):
    """Control flow, not an error: raised and caught inside golem, never shown as one."""


class BudgetSpent(Interrupt):
    """A budget (an agent's, a run's) has nothing left for the next step; ``reason`` says
    which and by how much. An agent ends ``budget_spent``; a run's step does not start."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EgressRefused(Interrupt):
    """The egress proxy refuses a destination, or cannot reach it; ``status`` is what the
    box's client is answered, ``rule`` what decided."""

    def __init__(self, status: int, rule: str) -> None:
        super().__init__(rule)
        self.status = status
        self.rule = rule


class ProviderDown(Interrupt):
    """A run's model provider stays down (``reason`` says how, ``back_at`` when the
    provider expects to be back, if it said): the run is paused, not failed, and resumes
    by itself later (docs/models.md)."""

    def __init__(self, reason: str, back_at: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.back_at = back_at


class Unmaskable(Interrupt):
    """A brokered answer the proxy cannot mask, so never hands to the box; ``rule`` says
    why."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


class BadMessage(Interrupt):
    """A WebSocket client's message the server cannot take: the call ends, the socket
    closes with ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
