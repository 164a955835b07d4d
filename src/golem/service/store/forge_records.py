"""The local forge's records in golem's store: pull requests and comments, by tenant."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from sqlalchemy import ColumnElement, Table, func, insert, select, text
from sqlalchemy.engine import Connection

from golem.forge import ForgeComment, PullRequest
from golem.service.store.schema import forge_comments, pull_requests

__all__ = ["ForgeRecords"]


class _Store(Protocol):
    tenant: str | None

    def transaction(self, *, write: bool = False) -> AbstractContextManager[Connection]: ...
    def _mine(self, table: Table) -> ColumnElement[bool]: ...
    def _creating(self, what: str) -> str: ...


def _text(value: str) -> str:
    """PostgreSQL's text holds no NUL; it becomes U+FFFD, as a decoder shows a bad byte."""
    return value.replace("\x00", "\ufffd")


class ForgeRecords:
    """The PullRequestStore half of SqlStore."""

    def add_pull_request(self: _Store, pr: PullRequest) -> PullRequest:
        """Keep ``pr`` with the next number of its repository; returns it."""
        tenant = self._creating("a pull request")
        with self.transaction(write=True) as db:
            if db.dialect.name == "postgresql":  # numbers one writer per repository at a time
                db.execute(text("SELECT pg_advisory_xact_lock(hashtext(:repo))"), {"repo": pr.repo})
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
                    tenant=tenant,
                    repo=pr.repo,
                    number=number,
                    created=pr.created,
                    data=numbered.model_dump_json(),
                )
            )
        return numbered

    def list_pull_requests(self: _Store, repo: str | None = None) -> list[PullRequest]:
        """Pull requests, newest first (of one repository, when given)."""
        query = select(pull_requests.c.data).where(self._mine(pull_requests))
        if repo is not None:
            query = query.where(pull_requests.c.repo == repo)
        with self.transaction() as db:
            rows = db.execute(query.order_by(pull_requests.c.id.desc())).all()
        return [PullRequest.model_validate_json(row.data) for row in rows]

    def get_pull_request(self: _Store, repo: str, number: int) -> PullRequest | None:
        """One pull request, or None."""
        with self.transaction() as db:
            row = db.execute(
                select(pull_requests.c.data).where(
                    self._mine(pull_requests),
                    pull_requests.c.repo == repo,
                    pull_requests.c.number == number,
                )
            ).first()
        return PullRequest.model_validate_json(row.data) if row is not None else None

    def add_comment(self: _Store, comment: ForgeComment) -> ForgeComment:
        """Keep a comment the local forge made; returns it."""
        tenant = self._creating("a comment")
        with self.transaction(write=True) as db:
            db.execute(
                insert(forge_comments).values(
                    tenant=tenant,
                    target=comment.target,
                    created=comment.created,
                    body=_text(comment.body),
                )
            )
        return comment

    def list_comments(self: _Store, target: str | None = None) -> list[ForgeComment]:
        """Comments, oldest first (on one issue or pull request, when given)."""
        query = select(forge_comments).where(self._mine(forge_comments))
        if target is not None:
            query = query.where(forge_comments.c.target == target)
        with self.transaction() as db:
            rows = db.execute(query.order_by(forge_comments.c.id)).all()
        return [ForgeComment(target=r.target, body=r.body, created=r.created) for r in rows]
