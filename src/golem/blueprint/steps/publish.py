"""Commit the run's checkout and push its branch: ship's commit and each CI fix's alike.

A commit is made once: its trailers (``Golem-Run: RUN``, and ``Golem-CI-Round: N`` for a
CI fix) find it again in a resumed run, which then only pushes it. A change that holds a
secret the run knows is never pushed, and a push never forces.
"""

from __future__ import annotations

from collections.abc import Mapping

from golem.blueprint.execution import Execution
from golem.core.errors import SecretInChange

__all__ = ["TRAILER", "commit_change", "find_change", "push_change", "refuse_secrets"]

TRAILER = "Golem-Run"


async def commit_change(
    ex: Execution, message: str, trailers: Mapping[str, str], *, since: str
) -> str | None:
    """The commit after ``since`` that carries every one of ``trailers`` (made before a
    crash), else a new commit of the checkout with them; None when nothing changed."""
    found = await find_change(ex, trailers, since=since)
    if found is not None:
        return found
    return await ex.repo().commit_all(
        ex.secrets.mask(message),
        ex.config.forge.author_name,
        ex.config.forge.author_email,
        trailers=dict(trailers),
    )


async def find_change(ex: Execution, trailers: Mapping[str, str], *, since: str) -> str | None:
    """The newest commit after ``since`` whose message carries every one of ``trailers``."""
    repo = ex.repo()
    first, *others = [f"{name}: {value}" for name, value in trailers.items()]
    found = await repo.find_commit(first, base=since)
    if found is None:
        return None
    for line in others:
        if not await repo.has_commit_with(line, rev=found, base=f"{found}^"):
            return None
    return found


async def push_change(ex: Execution, *, since: str) -> None:
    """Push the run's branch (never forced), unless the commits since ``since`` hold a
    secret's value."""
    await refuse_secrets(ex, since)
    await ex.repo().push(ex.state.branch)


async def refuse_secrets(ex: Execution, since: str) -> None:
    """Raise SecretInChange when the commits since ``since`` hold a secret's value."""
    every_byte = await ex.repo().diff(since, text=True)  # binary and -diff files too
    if ex.secrets.mask(every_byte) != every_byte:
        raise SecretInChange(
            "the change holds the value of a secret this run knows (a box secret, a brokered "
            "credential or a forge token); golem does not push it. Remove it from the files "
            f"and commit again on {ex.state.branch}, or rotate the secret"
        )
