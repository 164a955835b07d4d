"""The sessions the server holds, by tenant: opened under the key's policy and the server's
capacity, found only by their own tenant (anyone else gets 404), closed with the server."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from golem.core.config import GolemConfig
from golem.core.errors import BoxEnded, ConfigError, GolemError, Problem, SessionNotFound
from golem.core.events import EventSink, ExecEvent
from golem.sandbox import TENANT_LABEL, Box, Engine
from golem.service.keys import Principal
from golem.service.policy import check_spec
from golem.service.trust import floor_for, tier_for

__all__ = ["HeldSession", "SessionRegistry"]


@dataclass
class HeldSession:
    """A session the server holds for a tenant."""

    box: Box
    tenant: str
    created: float = field(default_factory=time.time)


ENDED_KEPT = 1024
"""Sessions whose box ended by itself that are remembered, to answer 410 with why."""


class SessionRegistry:
    """Opens, finds and closes sessions for principals."""

    def __init__(self, config: GolemConfig, engine: Engine) -> None:
        self._config = config
        self._engine = engine
        self._held: dict[str, HeldSession] = {}
        self._starting: dict[str, int] = {}  # tenant -> sessions whose box is being made
        self._ended: dict[str, tuple[str, str]] = {}  # session id -> (tenant, why)
        self._changed = asyncio.Event()  # set, and replaced, whenever a slot frees
        engine.on_session_end(self._box_ended)

    def _count(self, tenant: str | None = None) -> int:
        """Sessions held or being made (of one tenant, when given)."""
        self._drop_ended()
        held = sum(1 for h in self._held.values() if tenant in (None, h.tenant))
        starting = self._starting.get(tenant, 0) if tenant else sum(self._starting.values())
        return held + starting

    async def open(
        self,
        principal: Principal,
        asked: dict[str, Any],
        *,
        on_event: EventSink[ExecEvent] | None = None,
    ) -> HeldSession:
        """A new session with the box ``asked`` for, if the key's policy allows it and the
        server has room (or, when overflow is ``queue``, once it has, within
        ``server.session_wait``); ``on_event`` gets its setup script's events. Its box is
        of the isolation tier it asks for, raised to the least the trust policy gives it
        (a weaker one asked is refused)."""
        config = self._config
        policy = config.server.policies[principal.role]
        try:
            spec = self._engine.spec(asked)
        except (ValidationError, ConfigError) as exc:
            raise ConfigError(getattr(exc, "message", str(exc))) from None
        default_image = getattr(config.engine.backend, "image", "") or ""
        floor = floor_for(config, tenant=principal.tenant, role=principal.role)
        check_spec(spec, asked, policy, principal.role, default_image, floor)
        tier = tier_for(spec.tier, floor, config.engine.default_tier)
        tenant = principal.tenant
        await self._room(tenant, policy.max_sessions, f"server.policies.{principal.role}")
        # Nothing is awaited between the last check and taking the slot, so that requests
        # arriving (or woken) together cannot all pass the checks while their boxes start.
        self._starting[tenant] = self._starting.get(tenant, 0) + 1
        try:
            labels = {**spec.labels, TENANT_LABEL: tenant}
            box = await self._engine.create_session(
                spec.model_copy(update={"labels": labels, "tier": tier}), on_event=on_event
            )
            held = HeldSession(box=box, tenant=tenant)
            self._held[box.id] = held
        finally:
            self._starting[tenant] -= 1
            if not self._starting[tenant]:
                del self._starting[tenant]
            self._wake()
        return held

    async def _room(self, tenant: str, share: int, policy: str) -> None:
        """Return once the tenant is under its share and the server under its capacity;
        both are checked again after every wait."""
        server = self._config.server
        retry = {"Retry-After": str(server.retry_after)}
        deadline = asyncio.get_running_loop().time() + server.session_wait
        while True:
            if self._count(tenant) >= share:
                raise Problem(
                    429,
                    f"this tenant holds {share} sessions already "
                    f"({policy}.max_sessions): delete one first",
                    headers=retry,
                )
            if self._count() < server.max_sessions:
                return
            if server.overflow == "reject":
                raise Problem(
                    429,
                    f"the server holds {server.max_sessions} sessions, its limit "
                    f"(server.max_sessions); try again in {server.retry_after}s",
                    headers=retry,
                )
            changed = self._changed
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                async with asyncio.timeout(max(remaining, 0)):  # wait_for can lose a cancel
                    await changed.wait()
            except TimeoutError:
                raise Problem(
                    429,
                    f"no session slot freed within {server.session_wait:g}s "
                    f"(server.session_wait; the server holds {server.max_sessions}, "
                    f"server.max_sessions); try again in {server.retry_after}s",
                    headers=retry,
                ) from None

    def _wake(self) -> None:
        """Wake every request waiting for room (each checks again)."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _box_ended(self, session_id: str, why: str) -> None:
        """The engine says a session's box ended by itself: the session is gone."""
        held = self._held.pop(session_id, None)
        if held is None:
            return
        self._ended[session_id] = (held.tenant, why)
        while len(self._ended) > ENDED_KEPT:
            del self._ended[next(iter(self._ended))]
        self._wake()

    def _drop_ended(self) -> None:
        """Sessions whose box is closed without the engine having said so yet."""
        for session_id, held in list(self._held.items()):
            if held.box.closed:
                self._box_ended(session_id, "its box is closed")

    def get(self, principal: Principal, session_id: str) -> HeldSession:
        """A session of the principal's tenant; SessionNotFound (404) for any other, and
        BoxEnded (410) for one whose box ended by itself."""
        held = self._held.get(session_id)
        if held is not None and held.box.closed:
            self._box_ended(session_id, "its box is closed")
        elif held is not None and held.tenant == principal.tenant:
            return held
        ended = self._ended.get(session_id)
        if ended is not None and ended[0] == principal.tenant:
            raise BoxEnded(f"the session's box ended: {ended[1]}; start a new session")
        raise SessionNotFound(f"no session {session_id!r}; see GET /v1/sessions")

    def list(self, principal: Principal) -> list[HeldSession]:
        """The tenant's sessions, oldest first."""
        self._drop_ended()
        held = [h for h in self._held.values() if h.tenant == principal.tenant]
        return sorted(held, key=lambda h: h.created)

    async def close(self, principal: Principal, session_id: str) -> None:
        """End a session of the principal's tenant (one whose box ended is forgotten)."""
        try:
            self.get(principal, session_id)
        except BoxEnded:
            del self._ended[session_id]
            return
        await self._remove(session_id)

    async def _remove(self, session_id: str) -> None:
        held = self._held.pop(session_id, None)
        try:
            if held is not None:
                with contextlib.suppress(GolemError):
                    await self._engine.remove_session(session_id)
        finally:
            self._wake()

    async def close_all(self) -> None:
        """End every session (the server stops)."""
        for session_id in list(self._held):
            await self._remove(session_id)
