"""An automation as the API, the dashboard and ``golem automations ls`` show it: its last
run (and how that run stands now) and its next one."""

from __future__ import annotations

import time

from golem.service.automations.model import Automation, AutomationView
from golem.service.automations.schedule import next_slot
from golem.service.documents import Kept
from golem.store import Store

__all__ = ["next_run", "view_of"]


def next_run(automation: Automation, now: float) -> float | None:
    """The next slot of a schedule (None: no schedule, or disabled)."""
    definition = automation.definition
    if definition.cron is None or not definition.enabled:
        return None
    after = max(now, automation.last_slot or automation.seen)
    return next_slot(definition.cron, definition.timezone, after)


async def view_of(store: Store, kept: Kept[Automation]) -> AutomationView:
    """``kept`` as shown, its last run's status read from ``store``."""
    automation = kept.model
    last = automation.last
    status = None
    if last is not None:
        run = await store.for_tenant(kept.tenant).runs.load(last.run_id)
        status = run.status if run is not None else "gone"
    return AutomationView(
        name=automation.definition.name,
        tenant=kept.tenant,
        origin=automation.origin,
        definition=automation.definition,
        last_run=last,
        last_run_status=status,
        next_run=next_run(automation, time.time()),
        skipped=automation.skipped,
        fired=automation.fired,
    )
