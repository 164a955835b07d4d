"""The local forge's records in the store, on every store of the contract: pull requests
numbered per repository, comments kept per target, each tenant's own."""

from __future__ import annotations

import json

from golem.store import CommentRecord, Store
from tests.store.conftest import Database


def _numbered(repo: str) -> object:
    return lambda number: json.dumps({"repo": repo, "url": f"golem://local/{repo}/{number}"})


async def test_pull_requests_are_numbered_per_repository(store: Store) -> None:
    one = await store.forge.add_pull_request("a", 1.0, _numbered("a"))  # type: ignore[arg-type]
    two = await store.forge.add_pull_request("a", 2.0, _numbered("a"))  # type: ignore[arg-type]
    other = await store.forge.add_pull_request("b", 3.0, _numbered("b"))  # type: ignore[arg-type]
    assert (one.number, two.number, other.number) == (1, 2, 1)
    assert json.loads(two.data)["url"] == "golem://local/a/2"
    assert [p.number for p in await store.forge.pull_requests("a")] == [2, 1]
    assert len(await store.forge.pull_requests()) == 3
    found = await store.forge.pull_request("a", 1)
    assert found == one
    assert await store.forge.pull_request("a", 9) is None


async def test_comments_are_kept_per_target_oldest_first(store: Store) -> None:
    await store.forge.add_comment(CommentRecord(target="a#1", body="first", created=1.0))
    await store.forge.add_comment(CommentRecord(target="b#2", body="elsewhere", created=2.0))
    await store.forge.add_comment(CommentRecord(target="a#1", body="second ✓ \x00", created=3.0))
    assert [c.body for c in await store.forge.comments("a#1")] == ["first", "second ✓ \ufffd"]
    assert len(await store.forge.comments()) == 3


async def test_a_tenant_sees_only_its_own_forge_records(database: Database) -> None:
    acme, other = await database.open("acme"), await database.open("other")
    await acme.forge.add_pull_request("repo", 1.0, lambda number: "{}")
    await acme.forge.add_comment(CommentRecord(target="repo#1", body="acme's"))
    assert await other.forge.pull_requests() == []
    assert await other.forge.pull_request("repo", 1) is None
    assert await other.forge.comments() == []
    assert len(await acme.forge.pull_requests()) == 1
