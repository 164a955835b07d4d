"""Configuration of `golem serve` (``[server]`` in golem.toml): where it listens, how much it
runs at once, what each role of API key may ask for, and the forges' triggers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from golem.core.isolation import IsolationTier, TrustPolicy
from golem.core.linear_config import LinearConfig
from golem.core.network import EgressPolicy, RemotePolicy
from golem.core.sizes import ByteSize
from golem.core.slack_config import SlackConfig
from golem.core.spec import NetworkMode

__all__ = [
    "GitHubTriggerConfig",
    "GitLabTriggerConfig",
    "RemoteConfig",
    "RetentionConfig",
    "RolePolicy",
    "ServerConfig",
    "TriggerConfig",
    "default_policies",
]

Role = Literal["user", "trusted", "admin"]


def _contained_networks() -> list[NetworkMode]:
    return ["none", "filtered"]


def _web_ports() -> list[int]:
    return [80, 443]


MIB = 1024**2


class RolePolicy(BaseModel):
    """What a key of one role may ask of the server's boxes, field by field. A request
    beyond it is refused with an error naming this policy, never quietly lowered.

    Caps (``max_*``) of None mean no cap."""

    model_config = ConfigDict(extra="forbid")

    max_memory: ByteSize | None = Field(4 * 1024**3, description="Largest memory limit.")
    max_cpus: float | None = Field(4.0, gt=0, description="Most CPU cores.")
    max_pids: int | None = Field(1024, ge=8, description="Most processes per box.")
    max_timeout: float | None = Field(
        3600.0, gt=0, description="Longest time limit of a call (and idle time limit), seconds."
    )
    max_workspace_size: ByteSize | None = Field(8 * 1024**3, description="Largest /workspace.")
    max_tmp_size: ByteSize | None = Field(1024**3, description="Largest /tmp.")
    max_output_bytes: ByteSize | None = Field(
        16 * MIB, description="Largest output cap of a call (a box's max_output_bytes)."
    )
    max_file_bytes: ByteSize | None = Field(
        256 * MIB, description="Largest max_file_bytes: one file the host takes back."
    )
    max_takeback_bytes: ByteSize | None = Field(
        2 * 1024**3, description="Largest max_takeback_bytes: one transfer from a box."
    )
    max_return_files: int | None = Field(
        64, ge=0, description="Most files one call may ask back (return_files)."
    )
    max_env_bytes: ByteSize | None = Field(
        64 * 1024,
        description="Most bytes (names and values) of a box's env, of its secrets, and of a "
        "call's env, each.",
    )
    max_label_bytes: ByteSize | None = Field(
        4096, description="Most bytes (names and values) of a box's labels."
    )
    server_labels: bool = Field(
        False,
        description="May set labels under golem., the server's own (golem.tenant, "
        "golem.run mark what a box belongs to).",
    )
    networks: list[NetworkMode] = Field(
        default_factory=_contained_networks, description="Network modes allowed."
    )
    egress_cidrs: list[str] | None = Field(
        default_factory=list,
        description="Address ranges a filtered box's egress.allow_cidrs may open: each "
        "range asked must lie inside one of these; empty: none (private, loopback and "
        "link-local stay closed); None: any.",
    )
    egress_ports: list[int] | None = Field(
        default_factory=_web_ports,
        description="Ports a filtered box's egress.ports may list; None: any.",
    )
    images: list[str] = Field(
        default_factory=list,
        description="Regular expressions of images a box may name; empty: only the "
        "server's default image.",
    )
    host_workspace: bool = Field(False, description="May bind a host directory as /workspace.")
    writable_root: bool = Field(False, description="May ask for a writable root file system.")
    containers: bool = Field(
        False,
        description="May ask for a private container engine in a box (root of its microVM "
        "guest, never of this host); its runs whose checks need one get it.",
    )
    root_user: bool = Field(
        False, description="May run as uid 0 or gid 0 inside the box, however it is spelled."
    )
    max_sessions: int = Field(16, ge=0, description="Sessions a tenant may hold at once.")
    max_snapshot_bytes: ByteSize | None = Field(
        8 * 1024**3,
        description="Most bytes a tenant's snapshots of boxes take on the server: a new one "
        "removes the tenant's oldest others to fit; one that alone passes it is refused.",
    )
    min_tier: IsolationTier | None = Field(
        None,
        description="The least isolation tier of this role's sessions and runs (container, "
        "gvisor, microvm): a request may ask for a stronger one, never a weaker (403). On a "
        "Ray cluster the same tier places them: on nodes labelled golem-tier=<tier>. None: "
        "the default backend's tier, unless another rule of [server.trust] says more.",
    )
    max_body_bytes: ByteSize = Field(
        16 * MIB,
        ge=1024,
        description="Largest request body (other than an upload) and WebSocket message; "
        "past it, 413.",
    )
    max_upload_bytes: ByteSize | None = Field(
        1024**3, description="Largest file or archive uploaded into a session; past it, 413."
    )
    max_calls_per_socket: int = Field(
        64,
        ge=1,
        description="Calls one WebSocket of a session's call channel runs at once (each "
        "holds its answer until the client reads it); past it, a call is answered 429.",
    )
    server_files: bool = Field(
        False,
        description="A run may name files on the server: a local repository, a blueprint "
        "or issue file (the local forge reads issues from files), a scripted model.",
    )
    repos: RemotePolicy | None = Field(
        default_factory=RemotePolicy,
        description="Git remotes a run may name, checked when it is submitted and wherever "
        "git connects (schemes, hosts, ports, resolved addresses); None: any.",
    )

    @model_validator(mode="before")
    @classmethod
    def _tier_is_min_tier(cls, data: Any) -> Any:
        if isinstance(data, dict) and "tier" in data:
            raise ValueError(
                "tier is now min_tier, an isolation tier (container, gvisor or microvm) that "
                "is both the least tier of the role's boxes and runs and, on a Ray cluster, "
                "the golem-tier label of the nodes they run on (docs/cluster.md)"
            )
        return data

    @field_validator("egress_cidrs")
    @classmethod
    def _cidrs_parse(cls, cidrs: list[str] | None) -> list[str] | None:
        if cidrs is not None:
            EgressPolicy(allow_cidrs=cidrs)  # the same ranges a box's egress takes
        return cidrs

    @field_validator("egress_ports")
    @classmethod
    def _ports_valid(cls, ports: list[int] | None) -> list[int] | None:
        if ports is not None:
            EgressPolicy(ports=ports)
        return ports


def default_policies() -> dict[str, RolePolicy]:
    """``user``: safe for anyone; ``trusted`` and ``admin``: any image, host network,
    host workspaces, any remote, no caps on limits."""
    open_policy = RolePolicy(
        max_memory=None,
        max_cpus=None,
        max_pids=None,
        max_timeout=None,
        max_workspace_size=None,
        max_tmp_size=None,
        max_output_bytes=None,
        max_file_bytes=None,
        max_takeback_bytes=None,
        max_return_files=None,
        max_env_bytes=None,
        max_label_bytes=None,
        networks=["none", "filtered", "host"],
        egress_cidrs=None,
        egress_ports=None,
        images=[".*"],
        host_workspace=True,
        writable_root=True,
        root_user=True,
        max_sessions=64,
        max_snapshot_bytes=None,
        max_body_bytes=256 * MIB,
        max_upload_bytes=None,
        max_calls_per_socket=256,
        server_files=True,
        repos=None,
    )
    return {"user": RolePolicy(), "trusted": open_policy, "admin": open_policy}


FollowUpOn = Literal["mention", "changes_requested"]


def _follow_up_on() -> list[FollowUpOn]:
    return ["mention", "changes_requested"]


class TriggerConfig(BaseModel):
    """What a forge's webhook trigger starts, and for whom (``[server.github]``,
    ``[server.gitlab]``)."""

    model_config = ConfigDict(extra="forbid")

    secret_env: str = Field(
        "GOLEM_GITHUB_WEBHOOK_SECRET",
        description="Variable holding the webhook secret; unset: the endpoint refuses all.",
    )
    label: str = Field("golem", description="An issue given this label starts a run.")
    handle: str = Field("@golem", description="A comment mentioning this starts a run.")
    tenant: str = Field("default", description="Tenant that owns the runs it starts.")
    blueprint: str = Field("minion", description="Blueprint of those runs.")
    follow_up_blueprint: str = Field(
        "follow-up",
        description="Blueprint of the runs that answer reviewers on a pull request golem opened.",
    )
    follow_up_on: list[FollowUpOn] = Field(
        default_factory=_follow_up_on,
        description="What on a pull request golem opened starts a follow-up: a comment or "
        "review mentioning the handle (mention), any review requesting changes "
        "(changes_requested). Only from people who may push to the repository.",
    )
    model: str | None = Field(None, description="Their model; default: [models] default.")
    repo_url: str | None = Field(
        "https://github.com/{repo}.git",
        description="How to clone a repository named owner/name ({repo}).",
    )


class GitHubTriggerConfig(TriggerConfig):
    """``[server.github]``: runs started by GitHub's webhooks."""


class GitLabTriggerConfig(TriggerConfig):
    """``[server.gitlab]``: runs started by GitLab's webhooks."""

    secret_env: str = Field(
        "GOLEM_GITLAB_WEBHOOK_SECRET",
        description="Variable holding the webhook's secret token; unset: the endpoint refuses all.",
    )
    repo_url: str | None = Field(
        None,
        description="How to clone a project named group/project ({repo}); None: "
        "{base_url}/{repo}.git of [forge.gitlab].",
    )


class RetentionConfig(BaseModel):
    """How long the server keeps what finished runs leave behind (``[server.retention]``).
    A run itself stays listed with its outcome; its events and its directory (checkout,
    trajectories) go once it ended ``days`` ago."""

    model_config = ConfigDict(extra="forbid")

    days: float | None = Field(
        None,
        gt=0,
        description="Days a finished run's events and directory, and the record of a webhook "
        "delivery that started a run, are kept; None: ever.",
    )
    trajectories: Literal["keep", "archive", "delete"] = Field(
        "archive",
        description="A pruned run's trajectories: kept (moved to state_dir/trajectories/<run>), "
        "archived (state_dir/archive/<run>.tar.gz) or deleted with its directory.",
    )
    interval: float = Field(
        3600.0, gt=0, description="Seconds between the server's pruning passes."
    )


class ServerConfig(BaseModel):
    """``[server]``: `golem serve`."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8765, gt=0, lt=65536)
    admin_key_env: str = Field(
        "GOLEM_ADMIN_KEY", description="Variable holding the admin key (never the key itself)."
    )
    max_runs: int = Field(2, ge=1, description="Runs executed at once by this server.")
    max_sessions: int = Field(32, ge=1, description="Sessions (boxes) at once, all tenants.")
    max_queued: int = Field(100, ge=0, description="Queued runs before submissions overflow.")
    overflow: Literal["queue", "reject"] = Field(
        "reject",
        description="Past max_queued (runs) or max_sessions (sessions): reject: 429 with "
        "Retry-After; queue: a session request waits for a free slot.",
    )
    retry_after: int = Field(30, ge=1, description="Seconds a 429 tells the client to wait.")
    session_wait: float = Field(
        60.0,
        gt=0,
        description="overflow = queue: longest a session request waits for a free slot; "
        "then 429 with Retry-After.",
    )
    header_timeout: float = Field(
        10.0,
        gt=0,
        description="Seconds from a connection's or a request's first byte to the end of its "
        "headers; past it, 408 and the connection is closed.",
    )
    body_timeout: float = Field(
        30.0,
        gt=0,
        description="Each this many seconds, a request body must bring body_min_rate bytes "
        "a second (at least one byte) while the server reads it; else 408 and closed.",
    )
    body_min_rate: int = Field(
        1024, ge=0, description="Bytes a second a request body must average (body_timeout)."
    )
    max_json_depth: int = Field(
        64,
        ge=2,
        le=200,
        description="Deepest nesting of a JSON request body, webhook delivery, MCP request or "
        "WebSocket message; deeper is refused (400) before it is parsed. At most 200, the "
        "depth pydantic's own parser stops at.",
    )
    policies: dict[str, RolePolicy] = Field(
        default_factory=default_policies, description="What each role may ask for."
    )
    trust: TrustPolicy = Field(
        default_factory=TrustPolicy,
        description="The least isolation tier per tenant, trigger source and repository "
        "(the roles' own are server.policies.<role>.min_tier).",
    )
    github: GitHubTriggerConfig = Field(default_factory=GitHubTriggerConfig)
    gitlab: GitLabTriggerConfig = Field(default_factory=GitLabTriggerConfig)
    slack: SlackConfig = Field(
        default_factory=SlackConfig, description="Runs started from Slack (docs/slack.md)."
    )
    linear: LinearConfig = Field(
        default_factory=LinearConfig, description="Runs started from Linear (docs/linear.md)."
    )
    retention: RetentionConfig = Field(default_factory=RetentionConfig)

    @field_validator("policies")
    @classmethod
    def _every_role(cls, policies: dict[str, RolePolicy]) -> dict[str, RolePolicy]:
        defaults = default_policies()
        missing = sorted(set(defaults) - set(policies))
        unknown = sorted(set(policies) - set(defaults))
        if unknown:
            raise ValueError(f"unknown roles {', '.join(unknown)}: use user, trusted, admin")
        return {**{role: defaults[role] for role in missing}, **policies}

    credentials_key_env: str = Field(
        "GOLEM_CREDENTIALS_KEY",
        description="Variable holding the key that encrypts tenants' forge tokens in the "
        "store (Fernet; several, comma-separated, to rotate: the first encrypts); unset: the "
        "key file credentials.key in the state directory, made (mode 0600) on first use.",
    )
    shared_forge_tenants: list[str] | None = Field(
        None,
        description="Tenants whose runs may use the server's own forge token ([forge.github] "
        "token_env, [forge.gitlab] token_env) when they have none of their own; unset: the "
        "triggers' tenants (server.github.tenant, server.gitlab.tenant); []: no tenant.",
    )


class RemoteConfig(BaseModel):
    """``[remote]``: use a golem server's engine instead of this machine's (RemoteEngine)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(None, description="The server, e.g. http://golem:8765; None: local.")
    key_env: str = Field("GOLEM_API_KEY", description="Variable holding the API key.")
    timeout: float = Field(600.0, gt=0, description="Seconds one request may take.")
