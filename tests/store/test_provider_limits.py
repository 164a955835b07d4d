"""The providers' limiters on every store of the contract: a limiter's record changes
atomically across the processes sharing the store (a hold one learns holds them all, an
answer one gets wakes the others), and the records hold nothing but limiters'."""

from __future__ import annotations

import asyncio
import time

import pytest

from golem.agent.contracts import ProviderWait
from golem.agent.models.limiter import Hold, Permit, ProviderLimiter, limit_key
from golem.agent.models.rate_headers import read_rate_headers
from golem.core.errors import StoreError
from golem.store import Store
from tests.agent.pressure import anthropic_dialect
from tests.store.conftest import Database, run

KEY = "*limit:anthropic:" + "0" * 32


async def test_limiter_changes_from_processes_sharing_the_store_never_interleave(
    database: Database,
) -> None:
    first, second = await database.open(), await database.open("rival")
    seen: list[str | None] = []

    def count(document: str | None) -> tuple[str | None, bool]:
        seen.append(document)
        return str(int(document or "0") + 1), False

    async def bump(store: Store) -> None:
        for _ in range(15):
            await store.limits.update(KEY, count)

    await asyncio.gather(bump(first), bump(second), bump(first), bump(second))

    final: list[str | None] = []
    await second.limits.update(KEY, lambda document: (final.append(document), (None, False))[1])
    assert final == ["60"]  # no change lost, whichever process made it
    assert seen.count(None) == 1  # the record was made once


async def test_a_limiter_change_that_asks_wakes_the_keys_watchers_only(
    database: Database,
) -> None:
    store = await database.open()
    other = KEY.replace("0", "1")
    with store.watch(KEY) as watching, store.watch(other) as later:
        await store.limits.update(KEY, lambda document: ("{}", False))
        await store.limits.update(other, lambda document: ("{}", True))
        assert await later.wait(10)  # announced after the first change: it told nothing
        assert not watching.is_set()
        await store.limits.update(KEY, lambda document: (None, True))
        assert await watching.wait(10)


@pytest.mark.parametrize("key", ["run-1", "*queue", "*limit:" + "x" * 200, "limit:anthropic"])
async def test_the_limiters_records_hold_nothing_but_limiters(database: Database, key: str) -> None:
    store = await database.open()
    await store.runs.create(run("run-1"))
    with pytest.raises(StoreError, match="not a provider limiter's key"):
        await store.limits.update(key, lambda document: ("{}", True))


def limiter_on(store: Store, provider: str = "anthropic") -> ProviderLimiter:
    key = limit_key(provider, "https://api.example.test", "sk-shared-key")
    return ProviderLimiter(store.limits, key)


async def test_a_hold_one_process_learns_holds_every_process_on_the_store(
    database: Database,
) -> None:
    here, there = limiter_on(await database.open()), limiter_on(await database.open("rival"))
    permit = await here.admit(None, give_up_at=None)
    assert isinstance(permit, Permit)
    refused = read_rate_headers({"retry-after": "30"}, time.time())
    await here.failed(permit, refused, "the provider answered 429 rate_limit_error")

    held = await there.admit(None, give_up_at=time.time() + 1)

    assert isinstance(held, Hold)
    assert held.header == "retry-after: 30"
    assert "429" in held.reason
    assert held.until == pytest.approx(time.time() + 30, abs=5)
    other = limiter_on(await database.open(), provider="openai")  # another provider's
    assert isinstance(await other.admit(None, give_up_at=time.time()), Permit)


async def test_while_limits_are_unknown_one_call_goes_and_its_answer_wakes_the_others(
    database: Database,
) -> None:
    here, there = limiter_on(await database.open()), limiter_on(await database.open())
    probe = await here.admit(None, give_up_at=None)
    assert isinstance(probe, Permit)
    assert probe.probe
    waits: list[ProviderWait] = []
    waiting = asyncio.ensure_future(there.admit(waits.append, give_up_at=None))
    done, _ = await asyncio.wait({waiting}, timeout=1)
    assert not done  # it waits for the first call's answer

    now = time.time()
    answer = read_rate_headers(anthropic_dialect().headers(10, 9, now + 60, now), now)
    await here.answered(probe, answer)

    # woken by the answer, long before the lease of a lost caller (30 s) would end
    after = await asyncio.wait_for(waiting, timeout=20)
    assert isinstance(after, Permit)
    assert not after.probe
    assert "learning the provider's limits" in waits[0].reason


async def test_a_call_awaiting_anothers_answer_gives_up_only_on_what_the_answer_says(
    database: Database,
) -> None:
    here, there = limiter_on(await database.open()), limiter_on(await database.open())
    probe = await here.admit(None, give_up_at=None)
    assert isinstance(probe, Permit)
    waiting = asyncio.ensure_future(there.admit(None, give_up_at=time.time() + 20))
    done, _ = await asyncio.wait({waiting}, timeout=1)
    assert not done  # the answer is awaited, though its lease ends past the bound

    refused = read_rate_headers({"retry-after": "30"}, time.time())
    await here.failed(probe, refused, "the provider answered 529 overloaded_error")

    held = await asyncio.wait_for(waiting, timeout=20)
    assert isinstance(held, Hold)
    assert (held.header, held.reason) == (
        "retry-after: 30",
        "the provider answered 529 overloaded_error",
    )
