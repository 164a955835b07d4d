"""One limiter per provider and key, shared by every call that uses its ledger: golem's
store (every run of a server, every server and machine sharing the database), or one
process's ``MemoryLedger``.

A limiter's record (``LimitState``, JSON in the ledger, keyed by a fingerprint of the
provider, its URL and its key: never the key) says when calls may go:

- ``not_before``: no call before it. Set by a failure: ``retry-after``/``retry-after-ms``
  when the provider sent it, else golem's jittered back-off (0.5 s doubling to 30 s with
  each failure in a row, across every call of the key); and by a quota the answer says is
  spent (tokens), until its reset.
- the request quota (``counted``): what the rate-limit headers said is left until the
  reset, less each call let through since (by anyone). At 0, calls wait for the reset.
- ``probe``: while nothing fresh is known (at first, after a hold, after a reset), one
  call goes out, once every call let through before has been answered (so the provider
  has counted them all), and the others wait for its answer, whose headers say how many
  may follow: a burst of parallel runs never sends more than one request into the unknown.
- ``open``: the provider's answers carry no rate-limit headers (a local server): calls go.

Every change to the record is one atomic step of the ledger (a row lock in the store), so
processes sharing it never let through more than it allows.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from golem.agent.contracts import LimitChange, LimitLedger, ProviderWait, WaitSink
from golem.agent.models.rate_headers import RateHeaders
from golem.core.ansi import plain
from golem.core.errors import StoreError

__all__ = [
    "KEY_PREFIX",
    "Hold",
    "LimitState",
    "MemoryLedger",
    "Permit",
    "ProviderLimiter",
    "limit_key",
]

log = logging.getLogger("golem.agent.models.limiter")
T = TypeVar("T")

KEY_PREFIX = "*limit:"
"""Ledger keys begin with it (the store's run ids never begin with ``*``)."""
ANSWER_LEASE = 30.0
"""Seconds the others wait at most for the answers of the calls let through (a caller
that dies does not hold them longer)."""
FIRST_BACKOFF, LAST_BACKOFF = 0.5, 30.0
SAME_RESET = 0.001  # seconds: two resets this close are the same window's
LONGEST_REASON = 300


def limit_key(provider: str, base_url: str, api_key: str | None) -> str:
    """The ledger key of a provider reached at ``base_url`` with ``api_key``: a SHA-256
    fingerprint, so the key itself is never kept."""
    digest = hashlib.sha256(f"{provider}\0{base_url}\0{api_key or ''}".encode()).hexdigest()
    return f"{KEY_PREFIX}{provider}:{digest[:32]}"


class LimitState(BaseModel):
    """What a limiter knows (see the module)."""

    model_config = ConfigDict(extra="ignore")

    mode: Literal["probe", "counted", "open"] = "probe"
    not_before: float = 0.0
    why: str = ""
    """What set ``not_before``."""
    header: str | None = None
    """The header that set it, as sent."""
    remaining: int = 0
    reset: float = 0.0
    quota_header: str = ""
    grants: int = 0
    """Calls let through, ever: orders an answer against the calls sent after it."""
    unanswered: int = 0
    """Calls let through whose answer has not come (nor their failure)."""
    unanswered_until: float = 0.0
    """When those are taken as lost (their callers died): ANSWER_LEASE after the last."""
    failures: int = 0
    """Failures in a row, of any call of this key."""


@dataclass(frozen=True)
class Permit:
    """A call let through: the ``grant``-th of its key (``probe``: sent to learn)."""

    grant: int
    probe: bool = False


@dataclass(frozen=True)
class Hold:
    """Calls wait until ``until`` (epoch seconds): ``reason``, said by ``header``;
    ``for_answer``: they also go on as soon as another call's answer came."""

    until: float
    reason: str
    header: str | None = None
    for_answer: bool = False


def admit(state: LimitState, now: float) -> Permit | Hold:
    """Let one call through, or say how long to wait."""
    if state.not_before > now:
        return Hold(state.not_before, state.why, state.header)
    if state.mode == "counted" and state.reset <= now:
        state.mode = "probe"  # the window is over: what is left now, the next answer says
    if state.unanswered_until <= now:
        state.unanswered = 0  # their callers are gone
    if state.mode == "probe" and state.unanswered > 0:
        why = "another call is learning the provider's limits: its answer says how many may go"
        return Hold(state.unanswered_until, why, for_answer=True)
    if state.mode == "counted":
        if state.remaining <= 0:
            why = "no request is left until the provider's limit resets"
            return Hold(state.reset, why, f"{state.quota_header}: 0")
        state.remaining -= 1
    state.grants += 1
    state.unanswered += 1
    state.unanswered_until = now + ANSWER_LEASE
    return Permit(state.grants, probe=state.mode == "probe")


def _admitting(state: LimitState, *, now: float) -> tuple[Permit | Hold, bool]:
    return admit(state, now), False


def answered(state: LimitState, permit: Permit, headers: RateHeaders, now: float) -> bool:
    """Learn from an answer (its headers came); True: wake the waiters."""
    state.unanswered = max(state.unanswered - 1, 0)
    state.failures = 0
    _hold_spent_quotas(state, headers, now)
    requests = headers.quota("requests")
    if requests is None or requests.remaining is None or requests.reset is None:
        if state.mode == "probe":
            state.mode = "open"
        return True
    fresh = max(requests.remaining - (state.grants - permit.grant), 0)
    if state.mode == "counted" and requests.reset < state.reset - SAME_RESET:
        return True  # an answer of a window that is over
    if state.mode == "counted" and abs(requests.reset - state.reset) <= SAME_RESET:
        state.remaining = min(state.remaining, fresh)
    else:
        state.mode, state.remaining, state.reset = "counted", fresh, requests.reset
    state.quota_header = requests.header
    return True


def failed(
    state: LimitState, headers: RateHeaders, now: float, what: str, *, settles: bool
) -> Hold:
    """Learn from a failure (``what``: the provider's answer, in words; ``settles``: the
    call had no answer yet): every call of the key holds until the provider's
    retry-after, else golem's back-off; then one call learns the limits again. Returns
    this failure's hold."""
    if settles:
        state.unanswered = max(state.unanswered - 1, 0)
    state.failures += 1
    what = plain(what)[:LONGEST_REASON]
    if headers.retry_after is not None:
        hold = Hold(now + headers.retry_after, what, headers.retry_after_header)
    else:
        seconds = backoff(state.failures)
        hold = Hold(
            now + seconds,
            f"{what}; back-off {seconds:.1f}s after {state.failures} failure(s) in a row",
        )
    _hold(state, hold)
    _hold_spent_quotas(state, headers, now)
    state.mode = "probe"
    return hold


def released(state: LimitState) -> bool:
    """A call that got no answer worth learning from (refused as invalid, cancelled)
    and none before; True: wake the waiters."""
    state.unanswered = max(state.unanswered - 1, 0)
    return True


def backoff(failures: int) -> float:
    """Seconds to hold after ``failures`` failures in a row: doubling from 0.5 s up to
    30 s, less up to a quarter at random so that many callers do not retry in step."""
    delay = min(FIRST_BACKOFF * 2.0 ** (failures - 1), LAST_BACKOFF)
    return delay * (1 - 0.25 * random.random())  # noqa: S311 (jitter, not a secret)


def _hold(state: LimitState, hold: Hold) -> None:
    if hold.until > state.not_before:
        state.not_before, state.why, state.header = hold.until, hold.reason, hold.header


def _hold_spent_quotas(state: LimitState, headers: RateHeaders, now: float) -> None:
    """A quota the answer says is spent (none left, a reset ahead) holds every call."""
    for quota in headers.quotas:
        if quota.remaining == 0 and quota.reset is not None and quota.reset > now:
            why = f"the provider's {quota.name} limit is spent until it resets"
            _hold(state, Hold(quota.reset, why, f"{quota.header}: 0"))


def _jitter(seconds: float) -> float:
    """A little more than asked, at random, so that the waiters do not all go at once."""
    return random.uniform(0.0, min(1.0, 0.1 * seconds + 0.02))  # noqa: S311 (jitter)


class ProviderLimiter:
    """The limiter of one provider and key, on a ledger (see the module)."""

    def __init__(self, ledger: LimitLedger, key: str) -> None:
        self.ledger = ledger
        self.key = key
        self._fallback = MemoryLedger()  # while the store is away: this process alone
        self._settled: set[int] = set()  # this process's permits answered (or failed)

    async def admit(self, on_wait: WaitSink | None, give_up_at: float | None) -> Permit | Hold:
        """Wait until a call may go and let it through; the Hold instead when it lasts
        past ``give_up_at`` (another call's answer is awaited until then). Each wait goes
        to ``on_wait`` once it is over."""
        with self.ledger.watch(self.key) as changed:
            while True:
                changed.clear()
                now = time.time()
                decision = await self._apply(partial(_admitting, now=now))
                if isinstance(decision, Permit):
                    return decision
                until = decision.until
                if give_up_at is not None and until > give_up_at:
                    if not decision.for_answer or now >= give_up_at:
                        return decision
                    until = give_up_at  # an answer is awaited, not the provider's time
                began = time.monotonic()
                await changed.wait(max(until - now, 0.0) + _jitter(until - now))
                if on_wait is not None:
                    waited = time.monotonic() - began
                    on_wait(ProviderWait(waited, decision.reason, decision.header))

    async def answered(self, permit: Permit, headers: RateHeaders) -> None:
        """A call's answer began: learn from its headers."""
        now = time.time()
        self._settled.add(permit.grant)
        await self._apply(lambda state: (None, answered(state, permit, headers, now)))

    async def failed(self, permit: Permit, headers: RateHeaders, what: str) -> Hold:
        """A call failed for a passing reason: hold every call of the key."""
        now, settles = time.time(), self._settle(permit)

        def step(state: LimitState) -> tuple[Hold, bool]:
            return failed(state, headers, now, what, settles=settles), True

        return await self._apply(step)

    async def release(self, permit: Permit) -> None:
        """A call ended with nothing to learn from."""
        if self._settle(permit):
            await self._apply(lambda state: (None, released(state)))

    def forget(self, permit: Permit) -> None:
        """A call ended well: nothing more of it will be told."""
        self._settled.discard(permit.grant)

    def _settle(self, permit: Permit) -> bool:
        """Whether ``permit`` still counted as unanswered (it does no longer)."""
        if permit.grant in self._settled:
            self._settled.discard(permit.grant)
            return False
        return True

    async def _apply(self, step: Callable[[LimitState], tuple[T, bool]]) -> T:
        """Run ``step`` on the record, atomically in the ledger (in this process's own
        while the store is away: the provider's answers still hold calls back)."""
        results: list[T] = []

        def change(document: str | None) -> tuple[str | None, bool]:
            state = _state(document)
            value, wake = step(state)
            results.append(value)
            return state.model_dump_json(), wake

        try:
            await self.ledger.update(self.key, change)
        except StoreError as exc:
            log.warning("the limiter of %s works in this process alone: %s", self.key, exc)
            results.clear()
            await self._fallback.update(self.key, change)
        return results[-1]


def _state(document: str | None) -> LimitState:
    if document is None:
        return LimitState()
    try:
        return LimitState.model_validate_json(document)
    except ValidationError:  # unreadable: start again from knowing nothing
        return LimitState()


class MemoryLedger:
    """A ledger in this process's memory (one event loop's)."""

    def __init__(self) -> None:
        self._records: dict[str, str] = {}
        self._watchers: dict[str, set[_Wakeup]] = {}

    async def update(self, key: str, change: LimitChange) -> None:
        """Apply ``change`` (nothing else runs in between: it does not await)."""
        document, wake = change(self._records.get(key))
        if document is not None:
            self._records[key] = document
        if wake:
            for wakeup in self._watchers.get(key, set()):
                wakeup.event.set()

    @contextmanager
    def watch(self, key: str) -> Iterator[_Wakeup]:
        """A wakeup set when ``key``'s record changes with a wake asked for."""
        wakeup = _Wakeup()
        self._watchers.setdefault(key, set()).add(wakeup)
        try:
            yield wakeup
        finally:
            watching = self._watchers.get(key, set())
            watching.discard(wakeup)
            if not watching:
                self._watchers.pop(key, None)


class _Wakeup:
    def __init__(self) -> None:
        self.event = asyncio.Event()

    def clear(self) -> None:
        self.event.clear()

    async def wait(self, timeout: float = ANSWER_LEASE) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self.event.wait()
        except TimeoutError:
            return False
        return True
