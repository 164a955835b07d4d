"""What the store keeps, as it hands it out. A run's state and its events are JSON
documents of the layer above (the blueprint layer's RunState and RunEvent), with the few
fields the store queries by in columns of their own; the layer above maps its types in
and out, so the store depends on nothing above it."""

from __future__ import annotations

import re
import time
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from golem.core.errors import InvalidRequest, RunTaken

__all__ = [
    "ACTIVE",
    "FINISHED",
    "TOKEN_PATTERN",
    "ApiKeyRecord",
    "AppKey",
    "CheckpointRecord",
    "CommentRecord",
    "Decision",
    "DeliveryRecord",
    "DocumentRecord",
    "EventRecord",
    "ForgeCredential",
    "ForgeName",
    "ForgeSecret",
    "OAuthGrant",
    "PullRequestRecord",
    "Role",
    "RunCap",
    "RunRecord",
    "ThreadRecord",
    "check_claim",
    "check_token",
    "forge_secret",
]

Decision = Literal["approved", "rejected"]
ForgeName = Literal["github", "gitlab"]
Role = Literal["user", "trusted", "admin"]
ACTIVE: tuple[str, ...] = ("running", "waiting")
"""The statuses of a run in progress (a server owns it)."""
FINISHED: tuple[str, ...] = ("succeeded", "unverified", "escalated", "failed", "cancelled")
"""The statuses of a run that has ended."""
DELIVERY_ID_MAX = 128
SOURCE_PATTERN = r"^[a-z][a-z0-9-]{0,15}$"
"""A source of work's name, as the store keys its records by: github, gitlab, slack,
linear, automation (an automation's firing), loop (a goal loop's iteration)."""
TOKEN_PATTERN = re.compile(r"^[\x21-\x7e]{1,2048}$")
"""A token: 1-2048 visible ASCII characters (it travels in HTTP headers)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunCap(_Record):
    """A limit on the runs of the whole store (every tenant's, every server's), checked
    and kept in one step with a new run: at most ``limit`` runs in one of ``statuses``
    (the new one counted); past it the new run is refused with QueueFull(``reason``)."""

    statuses: tuple[str, ...]
    limit: int
    reason: str
    retry_after: int


class RunRecord(_Record):
    """A run as kept: its document, and the columns other processes write beside it (a
    cancel request, a gate's answer, the server that claimed it), which win over it."""

    id: str
    tenant: str
    status: str
    created: float
    updated: float
    document: str = Field(description="The run's state, as JSON.")
    cancel_requested: bool = False
    gate_decision: Decision | None = None
    owner: str | None = Field(None, description="host:pid of the server that claimed it.")
    claim: int = Field(
        0, description="How often it was claimed or requeued: the fencing token of its runner."
    )


def check_claim(run_id: str, held: int, claim: int | None) -> None:
    """RunTaken when a writer's ``claim`` is given and is not the one the run ``held``: it
    was claimed (or queued) again since the writer read it."""
    if claim is not None and held != claim:
        raise RunTaken(
            f"run {run_id} was claimed again (claim {held}) since this runner took it (claim "
            f"{claim}): another runner has it now, and this one's writes are refused"
        )


class DeliveryRecord(_Record):
    """A webhook delivery, by every id its source gave it (GitHub: its delivery id; GitLab:
    its event's UUID and its Idempotency-Key; Slack: its event's id and the message's
    channel and time; Linear: its ``Linear-Delivery``), or another once-only reason to
    start a run (an automation's slot, a goal loop's iteration): kept with the run it
    started, in the same step, or alone as handled (``store.deliveries.handle_once``), so that the
    same one again (by any of its ids) does nothing twice."""

    source: str = Field(pattern=SOURCE_PATTERN)
    ids: tuple[str, ...] = Field(min_length=1, max_length=4)

    @field_validator("ids")
    @classmethod
    def _sized(cls, ids: tuple[str, ...]) -> tuple[str, ...]:
        if any(not 1 <= len(one) <= DELIVERY_ID_MAX for one in ids):
            raise ValueError(f"a delivery's id is 1 to {DELIVERY_ID_MAX} characters")
        return tuple(dict.fromkeys(ids))  # each once, in order


class ThreadRecord(_Record):
    """Where a chat or tracker source asked for a run and reports on it (a Slack thread and the
    run's status message in it; a Linear issue and the run's status comment): kept with the
    run, in the step that keeps it, so that a restarted server goes on reporting, and a
    later request in the same thread finds the thread's runs."""

    source: str = Field(pattern=SOURCE_PATTERN)
    thread: str = Field(min_length=1, max_length=256, description="The source's own name.")
    run_id: str = Field("", description="The run (set by the store from the run kept).")
    tenant: str = Field("", description="The run's tenant (set by the store).")
    status: str | None = Field(
        None, max_length=128, description="The message that shows the run's progress."
    )
    detail: str = Field("", max_length=8192, description="The source's own, as JSON.")
    created: float = Field(default_factory=time.time)
    reported: float | None = Field(None, description="When the run's end was reported.")


class PendingRecord(_Record):
    """A request that arrived while its thread's run was running (a follow-up asked on a
    pull request, a mention in a Slack thread, a comment on a Linear issue): kept until
    that run ends, then started once, as a follow-up, by whichever server sees the end.
    One per person and thread: a later one from the same person replaces it."""

    source: str = Field(pattern=SOURCE_PATTERN)
    thread: str = Field(min_length=1, max_length=256, description="The source's own name.")
    person: str = Field(min_length=1, max_length=128, description="Who asked (their id).")
    run_id: str = Field(min_length=1, max_length=64, description="The run it waits for.")
    asked_by: str = Field("", max_length=128, description="Who asked, as shown.")
    request: str = Field("", max_length=65536, description="What they asked, masked.")
    detail: str = Field("", max_length=16384, description="The source's own, as JSON.")
    tenant: str = Field("", description="Its tenant (set by the store).")
    created: float = Field(default_factory=time.time)
    version: int = Field(0, description="Counts its replacements (set by the store).")


class DocumentRecord(_Record):
    """A document the layers above keep in the store (an automation, a goal loop),
    as JSON, named by its ``kind`` and ``key``; ``version``
    counts its writes, so that a writer changes it only as it read it."""

    kind: str
    key: str
    tenant: str
    version: int
    created: float
    updated: float
    document: str


class CheckpointRecord(_Record):
    """A run's checkout after blueprint node ``node`` (golem.forge.snapshot's bytes)."""

    node: str
    created: float
    data: bytes


class EventRecord(_Record):
    """One event of a run: its number in the run (from 1), and the event as JSON."""

    seq: int
    time: float
    type: str
    data: str


class PullRequestRecord(_Record):
    """A pull request the local forge opened, as JSON, numbered per repository."""

    repo: str
    number: int
    created: float
    data: str


class CommentRecord(_Record):
    """A comment the local forge made."""

    target: str
    body: str
    created: float = Field(default_factory=time.time)


class ForgeCredential(_Record):
    """A tenant's token for one forge, as listed: which forge, when set; never the token."""

    tenant: str
    forge: ForgeName
    created: float
    updated: float


class ApiKeyRecord(_Record):
    """An API key as listed (never its secret)."""

    id: str
    tenant: str
    role: Role
    name: str = ""
    created: float = Field(default_factory=time.time)
    revoked: bool = False


class AppKey(_Record):
    """A GitHub App's credentials: golem mints its installation tokens per use."""

    kind: Literal["app"] = "app"
    app_id: int = Field(gt=0)
    private_key: str = Field(min_length=1, max_length=16384, repr=False)
    """The App's private key, PEM."""
    installation_id: int | None = Field(None, gt=0)
    """None: the installation on each run's repository."""


class OAuthGrant(_Record):
    """An OAuth grant (GitLab's): the access token, the refresh token that mints the next
    one, and the OAuth application it belongs to. Each refresh replaces the whole grant:
    GitLab spends the refresh token it was given."""

    kind: Literal["oauth"] = "oauth"
    access_token: str = Field(pattern=r"^[\x21-\x7e]{0,2048}$", repr=False)
    """Empty: none yet (the refresh token mints the first)."""
    refresh_token: str = Field(pattern=TOKEN_PATTERN.pattern, repr=False)
    expires_at: float | None = None
    """When the access token expires (epoch seconds); None: unknown (used until a 401)."""
    client_id: str | None = Field(None, max_length=256)
    client_secret: str | None = Field(None, max_length=2048, repr=False)


ForgeSecret = str | AppKey | OAuthGrant
"""What a tenant keeps for a forge: a plain token (personal, project or group access
token), a GitHub App's key, or a GitLab OAuth grant."""

_DOCUMENTS: TypeAdapter[AppKey | OAuthGrant] = TypeAdapter(
    Annotated[AppKey | OAuthGrant, Field(discriminator="kind")]
)


def forge_secret(opened: str) -> ForgeSecret:
    """A stored secret from its opened text: a JSON document (an App's key, an OAuth
    grant), else a plain token (which never starts with ``{``)."""
    if not opened.startswith("{"):
        return opened
    try:
        return _DOCUMENTS.validate_json(opened)
    except ValidationError as exc:
        raise InvalidRequest(
            "a stored forge credential cannot be read (it was written by another version of "
            "golem?): set it again with PUT /v1/credentials/FORGE"
        ) from exc


def sealable(secret: ForgeSecret) -> str:
    """The text a secret is sealed as (``forge_secret`` reads it back)."""
    if isinstance(secret, str):
        return check_token(secret)
    return secret.model_dump_json()


def check_token(token: str) -> str:
    """``token``, if it can be one; else InvalidRequest (which never quotes it)."""
    if not TOKEN_PATTERN.match(token):
        raise InvalidRequest(
            "a forge token is 1-2048 visible ASCII characters, without spaces or line "
            "breaks: check what was pasted (the token is not shown here)"
        )
    return token
