"""The store's tables (SQLAlchemy Core). Changes go through an Alembic migration too."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

__all__ = [
    "api_keys",
    "documents",
    "forge_comments",
    "forge_credentials",
    "metadata",
    "pending_requests",
    "provider_limits",
    "pull_requests",
    "run_checkpoints",
    "run_events",
    "runs",
    "source_threads",
    "webhook_deliveries",
]

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("tenant", String(64), nullable=False, server_default="default"),
    Column("status", String(16), nullable=False),
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False),
    Column("state", Text, nullable=False),  # RunState as JSON
    Column("cancel_requested", Boolean, nullable=False, server_default="0"),
    Column("gate_decision", String(16), nullable=True),
    Column("owner", String(128), nullable=True),  # host:pid of the server that claimed it
    Column("claim", Integer, nullable=False, server_default="0"),  # fences stale runners
    Column("resume_at", Float, nullable=True),  # a paused run (waiting): when it resumes
    Index("ix_runs_tenant_created", "tenant", "created"),
    Index("ix_runs_status", "status"),
    Index("ix_runs_status_created", "status", "created"),
)

run_events = Table(
    "run_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(64), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("time", Float, nullable=False),
    Column("type", String(32), nullable=False),
    Column("data", Text, nullable=False),  # the event as JSON
    UniqueConstraint("run_id", "seq", name="uq_run_events_run_seq"),
)

run_checkpoints = Table(
    "run_checkpoints",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("node", String(64), nullable=False),  # the blueprint node it was taken after
    Column("created", Float, nullable=False),
    Column("data", LargeBinary, nullable=False),  # golem.forge.snapshot's bytes
)

pull_requests = Table(
    "pull_requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tenant", String(64), nullable=False, server_default="default"),
    Column("repo", String(512), nullable=False),
    Column("number", Integer, nullable=False),
    Column("created", Float, nullable=False),
    Column("data", Text, nullable=False),  # the PullRequest as JSON
    UniqueConstraint("repo", "number", name="uq_pull_requests_repo_number"),
)

forge_comments = Table(
    "forge_comments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("tenant", String(64), nullable=False, server_default="default"),
    Column("target", String(512), nullable=False),
    Column("created", Float, nullable=False),
    Column("body", Text, nullable=False),
    Index("ix_forge_comments_target", "target"),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("tenant", String(64), nullable=False),
    Column("role", String(16), nullable=False),
    Column("name", String(200), nullable=False, server_default=""),
    Column("hash", String(64), nullable=False),  # SHA-256 of the key's secret
    Column("created", Float, nullable=False),
    Column("revoked", Boolean, nullable=False, server_default=false()),
    Index("ix_api_keys_tenant", "tenant"),
)

forge_credentials = Table(
    "forge_credentials",
    metadata,
    Column("tenant", String(64), primary_key=True),
    Column("forge", String(16), primary_key=True),
    Column("token", Text, nullable=False),  # sealed (Fernet); the key is never in the database
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("tenant", String(64), primary_key=True),
    Column("source", String(16), primary_key=True),  # the forge: github, gitlab
    Column("delivery", String(128), primary_key=True),  # one of the delivery's ids
    # the run it started; None: handled, starting none (a refusal said once)
    Column("run_id", String(64), ForeignKey("runs.id", ondelete="CASCADE"), nullable=True),
    Column("created", Float, nullable=False),
    Index("ix_webhook_deliveries_created", "created"),
)

source_threads = Table(
    "source_threads",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("tenant", String(64), nullable=False),
    Column("source", String(16), nullable=False),  # slack
    Column("thread", String(256), nullable=False),  # the source's name of the thread
    Column("status", String(128), nullable=True),  # the status message's id (Slack: its ts)
    Column("detail", Text, nullable=False, server_default=""),  # the source's own, as JSON
    Column("created", Float, nullable=False),
    Column("reported", Float, nullable=True),  # when the run's end was reported there
    Index("ix_source_threads_thread", "tenant", "source", "thread"),
    Index("ix_source_threads_open", "source", "reported"),
)

provider_limits = Table(
    "provider_limits",
    metadata,
    Column("key", String(128), primary_key=True),  # provider and a fingerprint: never a key
    Column("document", Text, nullable=True),  # the limiter's record as JSON
    Column("updated", Float, nullable=False),
)

documents = Table(
    "documents",
    metadata,
    Column("kind", String(32), primary_key=True),  # automation, loop, linear, ...
    Column("key", String(200), primary_key=True),
    Column("tenant", String(64), nullable=False),
    Column("version", Integer, nullable=False),  # counts its writes: compare and swap
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False),
    Column("document", Text, nullable=False),  # the layer above's JSON
    Index("ix_documents_tenant_kind", "tenant", "kind"),
)

pending_requests = Table(
    "pending_requests",
    metadata,
    Column("tenant", String(64), primary_key=True),
    Column("source", String(16), primary_key=True),  # github, gitlab, slack, linear
    Column("thread", String(256), primary_key=True),  # the pull request, the thread
    Column("person", String(128), primary_key=True),  # who asked: one request each
    Column("run_id", String(64), nullable=False),  # the run it waits for
    Column("asked_by", String(128), nullable=False, server_default=""),
    Column("request", Text, nullable=False, server_default=""),  # masked
    Column("detail", Text, nullable=False, server_default=""),  # the source's own, as JSON
    Column("created", Float, nullable=False),
    Column("version", Integer, nullable=False, server_default="0"),  # fences its start
    Index("ix_pending_requests_run", "run_id"),
)
