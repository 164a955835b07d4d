"""Firing an automation: one run per firing, started once whatever repeats it, and never
two runs of one automation at a time.

Each firing has a once-only key (its schedule's slot, its webhook's Idempotency-Key, the
forge delivery of its event), kept with the run it starts in the same step (the store's
delivery keys): the same firing again, on any server of the store, before or after a
restart, starts nothing and names that run. A firing while the automation's last run is
still in progress (or while another firing starts one) starts nothing either: it is
recorded as skipped, with why. The firing in progress is kept in the automation before its
run is made, so a server that dies between the two leaves it for the next to finish."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel

from golem.blueprint import RunRequest
from golem.core.automation_config import AutomationConfig, zone
from golem.core.errors import DuplicateDelivery, GolemError, InvalidRequest, Problem
from golem.service.automations.model import KIND, Automation, Fired, Firing, Skipped
from golem.service.documents import Shelf
from golem.service.state import ServerState
from golem.store import DeliveryRecord

__all__ = [
    "STALE",
    "FireAnswer",
    "Firings",
    "common_fields",
    "once_key",
    "render_task",
    "run_request",
]

STALE = 120.0
"""Seconds after which a firing still in progress is taken to have lost its server."""


class FireAnswer(BaseModel):
    """What a firing did."""

    status: Literal["started", "duplicate", "skipped", "disabled"]
    reason: str
    run_id: str | None = None


def once_key(name: str, key: str) -> str:
    """The store's once-only key of ``name``'s firing ``key``."""
    return f"{name}@{key}"


def common_fields(name: str, timezone: str, now: float) -> dict[str, str]:
    """The fields every task template may name: the automation, the time, the date (in
    the automation's time zone)."""
    moment = datetime.fromtimestamp(now, zone(timezone))
    return {
        "automation": name,
        "time": moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "date": moment.strftime("%Y-%m-%d"),
    }


def render_task(definition: AutomationConfig, fields: dict[str, str]) -> str:
    """The task of a firing: the template with its fields (InvalidRequest naming a field
    the firing does not give)."""
    try:
        return definition.task.format_map(fields)
    except KeyError as exc:
        raise InvalidRequest(
            f"automation {definition.name!r}: its task names {{{exc.args[0]}}}, which this "
            f"firing does not give (it gives {', '.join(sorted(fields))})"
        ) from None


class Firings:
    """The server's way to fire its automations."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.shelf: Shelf[Automation] = Shelf(state.store, KIND, Automation)

    async def fire(
        self, name: str, key: str, fields: dict[str, str], how: str, *, slot: float | None = None
    ) -> FireAnswer:
        """Fire ``name`` once for ``key`` with ``fields`` (its template's, beyond the
        common ones); ``slot``: the schedule's slot it is for. QueueFull when the server
        has no room (the firing is recorded as skipped)."""
        kept = await self.shelf.load(name)
        if kept is None:
            raise Problem(404, f"no automation {name!r}; see GET /v1/automations")
        scoped = self.state.store.for_tenant(kept.tenant)
        started = await scoped.deliveries.find("automation", (once_key(name, key),))
        if started is not None:
            await self._settle(name, key, None)
            return _duplicate(key, started)
        automation = kept.model
        if not automation.definition.enabled:
            return FireAnswer(status="disabled", reason=f"automation {name} is disabled")
        busy = await self._busy(automation, kept.tenant, key)
        if busy is not None:
            await self._skip(name, key, busy, slot)
            return FireAnswer(status="skipped", reason=busy)
        firing = Firing(key=key, at=time.time(), fields=fields, how=how)
        claimed = await self.shelf.change(name, _claim(firing, slot))
        if claimed is None or claimed.firing is None or claimed.firing.key != key:
            why = "another firing of it started a run meanwhile"
            await self._skip(name, key, why, slot)
            return FireAnswer(status="skipped", reason=why)
        return await self.finish(name, kept.tenant, automation.definition, firing)

    async def finish(
        self, name: str, tenant: str, definition: AutomationConfig, firing: Firing
    ) -> FireAnswer:
        """Start the run of a claimed ``firing`` (once: a second start finds the first)."""
        try:
            run_id = await self._submit(tenant, definition, firing)
        except DuplicateDelivery as twice:
            await self._settle(
                name,
                firing.key,
                Fired(key=firing.key, run_id=twice.run_id, at=firing.at, how=firing.how),
            )
            return _duplicate(firing.key, twice.run_id)
        except GolemError as exc:
            await self._settle(name, firing.key, None)
            await self._skip(name, firing.key, f"its run could not start: {exc.message}", None)
            raise
        fired = Fired(key=firing.key, run_id=run_id, at=firing.at, how=firing.how)
        await self._settle(name, firing.key, fired)
        return FireAnswer(status="started", reason=f"{firing.how}: run {run_id}", run_id=run_id)

    async def _submit(self, tenant: str, definition: AutomationConfig, firing: Firing) -> str:
        request = run_request(self.state, definition, firing.fields)
        delivery = DeliveryRecord(source="automation", ids=(once_key(definition.name, firing.key),))
        run = await self.state.queue.submit(request, tenant, delivery=delivery)
        return run.id

    async def _busy(self, automation: Automation, tenant: str, key: str) -> str | None:
        """Why a firing may not start a run now (None: it may)."""
        firing = automation.firing
        if firing is not None and firing.key != key and time.time() - firing.at < STALE:
            return f"its firing {firing.key} is starting a run"
        last = automation.last
        if last is None:
            return None
        run = await self.state.store.for_tenant(tenant).runs.load(last.run_id)
        if run is not None and run.status in ("queued", "running", "waiting"):
            return f"its run {last.run_id} is still in progress ({run.status}): runs never overlap"
        return None

    async def _skip(self, name: str, key: str, why: str, slot: float | None) -> None:
        def skipped(automation: Automation) -> Automation:
            automation.skip(Skipped(key=key, at=time.time(), why=why))
            if slot is not None:
                automation.last_slot = max(automation.last_slot or 0.0, slot)
            return automation

        await self.shelf.change(name, skipped)

    async def _settle(self, name: str, key: str, fired: Fired | None) -> None:
        """The firing of ``key`` is over (``fired``: it started that run)."""

        def settled(automation: Automation) -> Automation | None:
            known = {one.run_id for one in automation.fired}
            mine = automation.firing is not None and automation.firing.key == key
            if not mine and (fired is None or fired.run_id in known):
                return None
            if mine:
                automation.firing = None
            if fired is not None and fired.run_id not in known:
                automation.ran(fired)
            return automation

        await self.shelf.change(name, settled)


def _claim(firing: Firing, slot: float | None) -> Callable[[Automation], Automation | None]:
    def claim(automation: Automation) -> Automation | None:
        held = automation.firing
        if held is not None and held.key != firing.key and time.time() - held.at < STALE:
            return None  # another firing is starting a run
        automation.firing = firing
        if slot is not None:
            automation.last_slot = max(automation.last_slot or 0.0, slot)
        return automation

    return claim


def _duplicate(key: str, run_id: str) -> FireAnswer:
    return FireAnswer(
        status="duplicate",
        reason=f"firing {key} started run {run_id} already: a duplicate starts nothing",
        run_id=run_id,
    )


def run_request(
    state: ServerState, definition: AutomationConfig, fields: dict[str, str]
) -> RunRequest:
    """The run a firing with ``fields`` asks for (an event's automation without a repo
    works on the event's repository, cloned as its forge's trigger clones)."""
    repo = definition.repo
    if repo is None:
        forge = "github" if (definition.event or "").startswith("github") else "gitlab"
        trigger = getattr(state.config.server, forge)
        template = trigger.repo_url or f"{state.config.forge.gitlab.base_url}/{{repo}}.git"
        repo = template.format(repo=fields.get("repo", definition.watch or ""))
    return RunRequest(
        repo=repo,
        task=render_task(definition, fields),
        blueprint=definition.blueprint,
        model=definition.model,
        forge=definition.forge,
        budget_usd=definition.budget_usd,
        base=definition.base,
    )
