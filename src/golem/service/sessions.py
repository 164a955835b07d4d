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
from golem.core.errors import ConfigError, GolemError, Problem, SessionNotFound
from golem.core.events import EventSink, ExecEvent
from golem.sandbox import Box, Engine
from golem.service.keys import Principal
from golem.service.policy import check_spec

__all__ = ["HeldSession", "SessionRegistry"]


@dataclass
class HeldSession:
    """A session the server holds for a tenant."""

    box: Box
    tenant: str
    created: float = field(default_factory=time.time)


class SessionRegistry:
    """Opens, finds and closes sessions for principals."""

    def __init__(self, config: GolemConfig, engine: Engine) -> None:
        self._config = config
        self._engine = engine
        self._held: dict[str, HeldSession] = {}
        self._starting: dict[str, int] = {}  # tenant -> sessions whose box is being made
        self._freed = asyncio.Condition()

    def _count(self, tenant: str | None = None) -> int:
        """Sessions held or being made (of one tenant, when given)."""
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
        server has room (or, when overflow is ``queue``, once it has); ``on_event`` gets
        its setup script's events."""
        server = self._config.server
        policy = server.policies[principal.role]
        try:
            spec = self._engine.spec(asked)
        except (ValidationError, ConfigError) as exc:
            raise ConfigError(getattr(exc, "message", str(exc))) from None
        backend = self._config.engine.backend
        default_image = getattr(backend, "image", "") or ""
        check_spec(spec, asked, policy, principal.role, default_image)
        if self._count(principal.tenant) >= policy.max_sessions:
            raise Problem(
                429,
                f"this tenant holds {policy.max_sessions} sessions already "
                f"(server.policies.{principal.role}.max_sessions): delete one first",
                headers={"Retry-After": str(server.retry_after)},
            )
        await self._room(server.max_sessions)
        # The slot is taken before the box is made, so that requests arriving together
        # cannot all pass the checks above while their boxes start.
        tenant = principal.tenant
        self._starting[tenant] = self._starting.get(tenant, 0) + 1
        try:
            labels = {**spec.labels, "golem.tenant": tenant}
            box = await self._engine.create_session(
                spec.model_copy(update={"labels": labels}), on_event=on_event
            )
            held = HeldSession(box=box, tenant=tenant)
            self._held[box.id] = held
        finally:
            self._starting[tenant] -= 1
            if not self._starting[tenant]:
                del self._starting[tenant]
            async with self._freed:
                self._freed.notify_all()
        return held

    async def _room(self, capacity: int) -> None:
        server = self._config.server
        if self._count() < capacity:
            return
        if server.overflow == "reject":
            raise Problem(
                429,
                f"the server holds {capacity} sessions, its limit (server.max_sessions); "
                f"try again in {server.retry_after}s",
                headers={"Retry-After": str(server.retry_after)},
            )
        async with self._freed:
            await self._freed.wait_for(lambda: self._count() < capacity)

    def get(self, principal: Principal, session_id: str) -> HeldSession:
        """A session of the principal's tenant; SessionNotFound (404) for any other."""
        held = self._held.get(session_id)
        if held is None or held.tenant != principal.tenant or held.box.closed:
            raise SessionNotFound(f"no session {session_id!r}; see GET /v1/sessions")
        return held

    def list(self, principal: Principal) -> list[HeldSession]:
        """The tenant's sessions, oldest first."""
        held = [h for h in self._held.values() if h.tenant == principal.tenant]
        return sorted(held, key=lambda h: h.created)

    async def close(self, principal: Principal, session_id: str) -> None:
        """End a session of the principal's tenant."""
        self.get(principal, session_id)
        await self._remove(session_id)

    async def _remove(self, session_id: str) -> None:
        held = self._held.pop(session_id, None)
        if held is not None:
            with contextlib.suppress(GolemError):
                await self._engine.remove_session(session_id)
        async with self._freed:
            self._freed.notify_all()

    async def close_all(self) -> None:
        """End every session (the server stops)."""
        for session_id in list(self._held):
            await self._remove(session_id)
