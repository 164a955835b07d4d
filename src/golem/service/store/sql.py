"""golem's store in SQL: a SQLite file by default, PostgreSQL when a database URL is given.

It keeps runs, their events and the local forge's pull requests; it implements the
blueprint layer's RunStore and the forge layer's PullRequestStore. The schema is migrated
with Alembic when a store opens, so several processes (a runner, ``golem runs cancel``,
servers) can share one database.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from importlib.resources import files
from typing import Any, Literal

from alembic import command
from alembic.config import Config as AlembicConfig
from pydantic import TypeAdapter
from sqlalchemy import Engine, create_engine, event, func, insert, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from golem.blueprint.events import RunEvent
from golem.blueprint.state import RunState
from golem.core.config import GolemConfig
from golem.core.errors import ConfigError, GolemError
from golem.forge import ForgeComment, PullRequest
from golem.service.store.schema import forge_comments, pull_requests, run_events, runs

__all__ = ["SqlStore", "StoreError", "database_url"]

_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
MIGRATION_LOCK = 0x60_1E_A7  # a PostgreSQL advisory lock id of golem's own


class StoreError(GolemError):
    """The database failed or refused."""

    http_status = 503


def database_url(config: GolemConfig) -> str:
    """The configured database URL, or the SQLite file in the state directory."""
    if config.database_url:
        return config.database_url
    config.state_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{config.state_dir / 'golem.db'}"


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers do not block the runner's writes
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class SqlStore:
    """Runs, events and pull requests, by tenant (``default`` outside the server)."""

    def __init__(self, url: str, *, tenant: str = "default") -> None:
        self.url = url
        self.tenant = tenant
        try:
            self.engine: Engine = create_engine(url, pool_pre_ping=True)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise ConfigError(f"cannot use database {_safe(url)}: {exc}") from exc
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._migrate()

    @classmethod
    def open(cls, config: GolemConfig) -> SqlStore:
        """The store the configuration names."""
        return cls(database_url(config))

    def _migrate(self) -> None:
        settings = AlembicConfig()
        settings.set_main_option(
            "script_location", str(files("golem.service.store") / "migrations")
        )
        try:
            with self.engine.begin() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
                settings.attributes["connection"] = connection
                command.upgrade(settings, "head")
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot prepare database {_safe(self.url)}: {exc}") from exc

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()

    # Runs -----------------------------------------------------------------------------

    def create_run(self, state: RunState) -> None:
        """Keep a new run."""
        with self._begin() as db:
            db.execute(
                insert(runs).values(
                    id=state.id,
                    tenant=self.tenant,
                    status=state.status,
                    created=state.created,
                    updated=state.updated,
                    state=state.model_dump_json(),
                )
            )

    def save_run(self, state: RunState) -> None:
        """Replace a run's state; its cancel request and gate decision are kept."""
        state.updated = time.time()
        with self._begin() as db:
            db.execute(
                update(runs)
                .where(runs.c.id == state.id)
                .values(status=state.status, updated=state.updated, state=state.model_dump_json())
            )

    def load_run(self, run_id: str) -> RunState | None:
        """A run with its latest cancel request and gate decision, or None."""
        with self._begin() as db:
            row = db.execute(
                select(runs).where(runs.c.id == run_id, runs.c.tenant == self.tenant)
            ).first()
        return _state(row) if row is not None else None

    def list_runs(self, limit: int = 50) -> list[RunState]:
        """Runs, newest first."""
        with self._begin() as db:
            rows = db.execute(
                select(runs)
                .where(runs.c.tenant == self.tenant)
                .order_by(runs.c.created.desc())
                .limit(limit)
            ).all()
        return [_state(row) for row in rows]

    def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        with self._begin() as db:
            db.execute(update(runs).where(runs.c.id == run_id).values(cancel_requested=True))

    def decide_gate(self, run_id: str, decision: Literal["approved", "rejected"]) -> None:
        """Answer the gate a run waits at."""
        with self._begin() as db:
            db.execute(update(runs).where(runs.c.id == run_id).values(gate_decision=decision))

    def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer once the runner has acted on it."""
        with self._begin() as db:
            db.execute(update(runs).where(runs.c.id == run_id).values(gate_decision=None))

    def append_event(self, run_id: str, event: RunEvent) -> int:
        """Keep an event; returns its sequence number in the run (from 1)."""
        with self._begin() as db:
            last = db.execute(
                select(func.coalesce(func.max(run_events.c.seq), 0)).where(
                    run_events.c.run_id == run_id
                )
            ).scalar_one()
            seq = int(last) + 1
            db.execute(
                insert(run_events).values(
                    run_id=run_id,
                    seq=seq,
                    time=event.time,
                    type=event.type,
                    data=event.model_dump_json(),
                )
            )
        return seq

    def events(self, run_id: str, after: int = 0) -> list[tuple[int, RunEvent]]:
        """The run's events after sequence number ``after``, in order."""
        with self._begin() as db:
            rows = db.execute(
                select(run_events.c.seq, run_events.c.data)
                .where(run_events.c.run_id == run_id, run_events.c.seq > after)
                .order_by(run_events.c.seq)
            ).all()
        return [(int(row.seq), _EVENT.validate_json(row.data)) for row in rows]

    # Pull requests (the local forge) --------------------------------------------------

    def add_pull_request(self, pr: PullRequest) -> PullRequest:
        """Keep ``pr`` with the next number of its repository; returns it."""
        with self._begin() as db:
            last = db.execute(
                select(func.coalesce(func.max(pull_requests.c.number), 0)).where(
                    pull_requests.c.repo == pr.repo
                )
            ).scalar_one()
            number = int(last) + 1
            numbered = pr.model_copy(
                update={"number": number, "url": pr.url.replace("{number}", str(number))}
            )
            db.execute(
                insert(pull_requests).values(
                    tenant=self.tenant,
                    repo=pr.repo,
                    number=number,
                    created=pr.created,
                    data=numbered.model_dump_json(),
                )
            )
        return numbered

    def list_pull_requests(self, repo: str | None = None) -> list[PullRequest]:
        """Pull requests, newest first (of one repository, when given)."""
        query = select(pull_requests.c.data).where(pull_requests.c.tenant == self.tenant)
        if repo is not None:
            query = query.where(pull_requests.c.repo == repo)
        with self._begin() as db:
            rows = db.execute(query.order_by(pull_requests.c.id.desc())).all()
        return [PullRequest.model_validate_json(row.data) for row in rows]

    def get_pull_request(self, repo: str, number: int) -> PullRequest | None:
        """One pull request, or None."""
        with self._begin() as db:
            row = db.execute(
                select(pull_requests.c.data).where(
                    pull_requests.c.tenant == self.tenant,
                    pull_requests.c.repo == repo,
                    pull_requests.c.number == number,
                )
            ).first()
        return PullRequest.model_validate_json(row.data) if row is not None else None

    def add_comment(self, comment: ForgeComment) -> ForgeComment:
        """Keep a comment the local forge made; returns it."""
        with self._begin() as db:
            db.execute(
                insert(forge_comments).values(
                    tenant=self.tenant,
                    target=comment.target,
                    created=comment.created,
                    body=comment.body,
                )
            )
        return comment

    def list_comments(self, target: str | None = None) -> list[ForgeComment]:
        """Comments, oldest first (on one issue or pull request, when given)."""
        query = select(forge_comments).where(forge_comments.c.tenant == self.tenant)
        if target is not None:
            query = query.where(forge_comments.c.target == target)
        with self._begin() as db:
            rows = db.execute(query.order_by(forge_comments.c.id)).all()
        return [ForgeComment(target=r.target, body=r.body, created=r.created) for r in rows]

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A transaction; database errors become StoreError."""
        try:
            with self.engine.begin() as connection:
                yield connection
        except SQLAlchemyError as exc:
            raise StoreError(f"the database {_safe(self.url)} failed: {exc}") from exc


def _state(row: Any) -> RunState:
    state = RunState.model_validate_json(row.state)
    state.cancel_requested = bool(row.cancel_requested)
    if state.gate is not None and state.gate.decision is None and row.gate_decision:
        state.gate = state.gate.model_copy(
            update={"decision": row.gate_decision, "decided_by": "person"}
        )
    return state


def _safe(url: str) -> str:
    """A database URL without its password."""
    try:
        from sqlalchemy.engine import make_url  # noqa: PLC0415 - only for messages

        return make_url(url).render_as_string(hide_password=True)
    except (SQLAlchemyError, ValueError):
        return "<database>"
