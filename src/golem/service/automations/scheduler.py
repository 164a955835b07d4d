"""The schedules: the automations of golem.toml kept in the store, and their cron slots
fired, each once.

The store is the schedule: each automation keeps the last slot fired (or skipped), so
servers sharing a PostgreSQL store fire each slot exactly once between them (the slot's
once-only key, kept with its run), and a server that starts after slots passed fires the
latest of them once, never once per slot missed (the others are recorded as skipped). A
slot counts from when the store first had the automation. The time comes from ``clock``
(tests drive it); the server waits for the next slot, or for an automation to change."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from golem.core.automation_config import AutomationConfig
from golem.core.errors import GolemError
from golem.service.automations.firing import STALE, Firings, common_fields
from golem.service.automations.model import Automation, Skipped
from golem.service.automations.schedule import latest_slot, next_slot, slot_key, slots_between
from golem.service.documents import Kept
from golem.store import RECHECK, RETRY_AFTER

__all__ = ["Scheduler"]

log = logging.getLogger("golem.service.automations")
Clock = Callable[[], float]


class Scheduler:
    """Fires the automations' schedules (and finishes firings a dead server left)."""

    def __init__(self, firings: Firings, *, clock: Clock = time.time) -> None:
        self.firings = firings
        self.shelf = firings.shelf
        self.clock = clock
        self._task: asyncio.Task[None] | None = None

    async def sync(self, definitions: list[AutomationConfig]) -> None:
        """Keep golem.toml's automations in the store: new ones made (their slots count
        from now), changed ones replaced (their record kept), removed ones forgotten."""
        kept = {one.model.definition.name: one for one in await self.shelf.all()}
        for definition in definitions:
            name = definition.name
            current = kept.pop(name, None)
            if current is not None and current.tenant != definition.tenant:
                await self.shelf.delete(name)  # another tenant's now: made anew under it
                current = None
            if current is None:
                made = Automation(definition=definition, origin="config", seen=self.clock())
                await self.shelf.for_tenant(definition.tenant).create(name, made)
            elif current.model.definition != definition or current.model.origin != "config":
                await self.shelf.change(name, _defined(definition))
        for name, left in kept.items():
            if left.model.origin == "config":
                await self.shelf.delete(name)

    async def start_with(self, definitions: list[AutomationConfig]) -> None:
        """Keep ``definitions`` (golem.toml's) in the store, then fire the schedules in
        the background. The server answers once they are kept, so an automation of
        golem.toml is there to be asked for; a store away at start is waited for in the
        background instead (the server starts anyway)."""
        try:
            await self.sync(definitions)
        except GolemError as exc:
            log.warning("automations: cannot keep golem.toml's yet: %s", exc.message)
            self._task = asyncio.ensure_future(self._run(definitions))
            return
        self._task = asyncio.ensure_future(self._run([], synced=True))

    async def close(self) -> None:
        """Stop firing (a restarted server goes on from the store)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self, definitions: list[AutomationConfig], *, synced: bool = False) -> None:
        while not synced:
            try:
                await self.sync(definitions)
                synced = True
            except GolemError as exc:
                log.warning("automations: cannot keep golem.toml's: %s", exc.message)
                await asyncio.sleep(RETRY_AFTER)  # a back-off: the store said nothing yet
        with self.shelf.watch() as changed:
            while True:
                changed.clear()
                try:
                    due = await self.tick(self.clock())
                except GolemError as exc:  # the store is away: look again soon
                    log.warning("automations: cannot fire their schedules: %s", exc.message)
                    await changed.wait(RETRY_AFTER)
                    continue
                wait = RECHECK if due is None else max(due - self.clock(), 0.0)
                await changed.wait(min(wait, RECHECK))

    async def tick(self, now: float) -> float | None:
        """Fire every slot due at ``now`` and finish the firings a dead server left; the
        time of the next slot (None: no schedule)."""
        upcoming: list[float] = []
        for kept in await self.shelf.all():
            try:
                await self._finish_stale(kept)
                later = await self._fire_due(kept, now)
            except GolemError as exc:
                log.warning("automation %s: %s", kept.model.definition.name, exc.message)
                continue
            if later is not None:
                upcoming.append(later)
        return min(upcoming, default=None)

    async def _fire_due(self, kept: Kept[Automation], now: float) -> float | None:
        automation = kept.model
        definition = automation.definition
        if definition.cron is None or not definition.enabled:
            return None
        cron, zone_name = definition.cron, definition.timezone
        since = automation.last_slot or automation.seen
        due = latest_slot(cron, zone_name, now)
        if due > since:
            missed = slots_between(cron, zone_name, since, due)
            if missed:
                await self._missed(definition.name, due, since, missed)
            fields = common_fields(definition.name, zone_name, due)
            answer = await self.firings.fire(
                definition.name, slot_key(due), fields, "schedule", slot=due
            )
            log.info("automation %s, slot %s: %s", definition.name, slot_key(due), answer.reason)
        return next_slot(cron, zone_name, max(now, due))

    async def _missed(self, name: str, due: float, since: float, missed: int) -> None:
        when = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%MZ")
        why = (
            f"{missed} earlier slot(s) since {when} passed while no server ran it: only the "
            "latest runs, once"
        )

        def noted(automation: Automation) -> Automation | None:
            if (automation.last_slot or automation.seen) >= due:
                return None  # fired already (another server)
            automation.skip(Skipped(key=slot_key(due), at=self.clock(), why=why))
            return automation

        await self.shelf.change(name, noted)

    async def _finish_stale(self, kept: Kept[Automation]) -> None:
        """Finish a firing whose server died between keeping it and starting its run."""
        firing = kept.model.firing
        if firing is None or time.time() - firing.at < STALE:  # firings keep the wall clock's
            return
        definition = kept.model.definition
        log.info("automation %s: finishing firing %s", definition.name, firing.key)
        await self.firings.finish(definition.name, kept.tenant, definition, firing)


def _defined(definition: AutomationConfig) -> Callable[[Automation], Automation]:
    def defined(automation: Automation) -> Automation:
        automation.definition = definition
        automation.origin = "config"
        return automation

    return defined
