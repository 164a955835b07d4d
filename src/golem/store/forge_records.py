"""The local forge's records in golem's store: pull requests and comments, by tenant.

A pull request is kept as its JSON (the forge layer's model), numbered per repository."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sqlalchemy import func, insert, select, text, update

from golem.store.bounds import bounded
from golem.store.records import CommentRecord, PullRequestRecord
from golem.store.repository import MemoryRepository, SqlRepository
from golem.store.schema import forge_comments, pull_requests

__all__ = ["ForgeRecords", "MemoryForgeRecords", "SqlForgeRecords", "storable_text"]


class ForgeRecords(Protocol):
    """The local forge's pull requests and comments (``store.forge``)."""

    async def add_pull_request(
        self, repo: str, created: float, render: Callable[[int], str]
    ) -> PullRequestRecord:
        """Keep a pull request with the next number of ``repo`` (``render``: its JSON)."""
        ...

    async def pull_requests(self, repo: str | None = None) -> list[PullRequestRecord]:
        """Pull requests, newest first."""
        ...

    async def pull_request(self, repo: str, number: int) -> PullRequestRecord | None:
        """One pull request, or None."""
        ...

    async def update_pull_request(self, repo: str, number: int, data: str) -> bool:
        """Replace a kept pull request's JSON (its labels changed); False when none."""
        ...

    async def add_comment(self, comment: CommentRecord) -> CommentRecord:
        """Keep a comment the local forge made."""
        ...

    async def comments(self, target: str | None = None) -> list[CommentRecord]:
        """Comments, oldest first."""
        ...


def storable_text(value: str) -> str:
    """PostgreSQL's text holds no NUL; it becomes U+FFFD, as a decoder shows a bad byte."""
    return value.replace("\x00", "\ufffd")


def _pull_request(row: object) -> PullRequestRecord:
    return PullRequestRecord.model_validate(row, from_attributes=True)


@bounded(
    retried={"pull_requests", "pull_request", "comments", "update_pull_request"},
    once={"add_pull_request", "add_comment"},
)
class SqlForgeRecords(SqlRepository):
    """The local forge's records in SQL."""

    async def add_pull_request(
        self, repo: str, created: float, render: Callable[[int], str]
    ) -> PullRequestRecord:
        """Keep a pull request with the next number of ``repo``; ``render`` makes its JSON
        from that number."""
        tenant = self._creating("a pull request")
        async with self.transaction(write=True) as db:
            if db.dialect.name == "postgresql":  # numbers one writer per repository at a time
                await db.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext(:repo))"), {"repo": repo}
                )
            last = (
                await db.execute(
                    select(func.coalesce(func.max(pull_requests.c.number), 0)).where(
                        pull_requests.c.repo == repo
                    )
                )
            ).scalar_one()
            record = PullRequestRecord(
                repo=repo, number=int(last) + 1, created=created, data=render(int(last) + 1)
            )
            await db.execute(insert(pull_requests).values(tenant=tenant, **record.model_dump()))
        return record

    async def pull_requests(self, repo: str | None = None) -> list[PullRequestRecord]:
        """Pull requests, newest first (of one repository, when given)."""
        query = select(pull_requests).where(self._mine(pull_requests))
        if repo is not None:
            query = query.where(pull_requests.c.repo == repo)
        async with self.transaction() as db:
            rows = (await db.execute(query.order_by(pull_requests.c.id.desc()))).all()
        return [_pull_request(row) for row in rows]

    async def update_pull_request(self, repo: str, number: int, data: str) -> bool:
        """Replace a kept pull request's JSON; False when this tenant has none such."""
        async with self.transaction(write=True) as db:
            done = await db.execute(
                update(pull_requests)
                .where(
                    self._mine(pull_requests),
                    pull_requests.c.repo == repo,
                    pull_requests.c.number == number,
                )
                .values(data=data)
            )
        return bool(done.rowcount)

    async def pull_request(self, repo: str, number: int) -> PullRequestRecord | None:
        """One pull request, or None."""
        async with self.transaction() as db:
            row = (
                await db.execute(
                    select(pull_requests).where(
                        self._mine(pull_requests),
                        pull_requests.c.repo == repo,
                        pull_requests.c.number == number,
                    )
                )
            ).first()
        return _pull_request(row) if row is not None else None

    async def add_comment(self, comment: CommentRecord) -> CommentRecord:
        """Keep a comment the local forge made; returns it."""
        tenant = self._creating("a comment")
        async with self.transaction(write=True) as db:
            await db.execute(
                insert(forge_comments).values(
                    tenant=tenant,
                    target=comment.target,
                    created=comment.created,
                    body=storable_text(comment.body),
                )
            )
        return comment

    async def comments(self, target: str | None = None) -> list[CommentRecord]:
        """Comments, oldest first (on one issue or pull request, when given)."""
        query = select(forge_comments).where(self._mine(forge_comments))
        if target is not None:
            query = query.where(forge_comments.c.target == target)
        async with self.transaction() as db:
            rows = (await db.execute(query.order_by(forge_comments.c.id))).all()
        return [CommentRecord(target=r.target, body=r.body, created=r.created) for r in rows]


class MemoryForgeRecords(MemoryRepository):
    """The local forge's records in memory."""

    async def add_pull_request(
        self, repo: str, created: float, render: Callable[[int], str]
    ) -> PullRequestRecord:
        """Keep a pull request with the next number of ``repo``."""
        tenant = self._creating("a pull request")
        number = 1 + max(
            (pr.number for _, pr in self._data.pull_requests if pr.repo == repo), default=0
        )
        record = PullRequestRecord(repo=repo, number=number, created=created, data=render(number))
        self._data.pull_requests.append((tenant, record))
        return record

    async def pull_requests(self, repo: str | None = None) -> list[PullRequestRecord]:
        """Pull requests, newest first."""
        kept = [pr for tenant, pr in self._data.pull_requests if self._mine(tenant)]
        return [pr for pr in reversed(kept) if repo is None or pr.repo == repo]

    async def pull_request(self, repo: str, number: int) -> PullRequestRecord | None:
        """One pull request, or None."""
        found = [pr for pr in await self.pull_requests(repo) if pr.number == number]
        return found[0] if found else None

    async def update_pull_request(self, repo: str, number: int, data: str) -> bool:
        """Replace a kept pull request's JSON; False when this tenant has none such."""
        for index, (tenant, pr) in enumerate(self._data.pull_requests):
            if self._mine(tenant) and pr.repo == repo and pr.number == number:
                self._data.pull_requests[index] = (tenant, pr.model_copy(update={"data": data}))
                return True
        return False

    async def add_comment(self, comment: CommentRecord) -> CommentRecord:
        """Keep a comment the local forge made."""
        kept = comment.model_copy(update={"body": storable_text(comment.body)})
        self._data.comments.append((self._creating("a comment"), kept))
        return comment

    async def comments(self, target: str | None = None) -> list[CommentRecord]:
        """Comments, oldest first."""
        return [
            comment
            for tenant, comment in self._data.comments
            if self._mine(tenant) and (target is None or comment.target == target)
        ]
