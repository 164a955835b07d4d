"""Retention: what runs that ended long ago leave behind is pruned, as ``[server.retention]``
says: their directories (the checkout) are removed and their trajectories kept, archived
or deleted, then the store deletes their events but their ``run_end`` (the runs stay listed,
with their outcome), and forgets the webhook deliveries kept as long ago.
The server runs it every ``interval`` seconds."""

from __future__ import annotations

import asyncio
import re
import shutil
import tarfile
import time
from pathlib import Path

from golem.blueprint.book import RunBook, run_state
from golem.blueprint.state import RunState
from golem.core.config import GolemConfig
from golem.store import Store

__all__ = ["prune_runs"]

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # a run id that names a directory


async def prune_runs(store: Store, config: GolemConfig, now: float | None = None) -> list[str]:
    """Prune the runs of ``store`` that ended more than ``[server.retention] days`` before
    ``now``, and the deliveries kept before then; returns the runs' ids (none when
    retention is off)."""
    retention = config.server.retention
    if retention.days is None:
        return []
    ended_before = (time.time() if now is None else now) - retention.days * 86400
    pruned = []
    for record in await store.runs.prunable(ended_before):
        state = run_state(record)
        if not SAFE_ID.match(state.id):
            continue  # never a path outside state_dir/runs
        # The directory goes first, the events last: a pass that stops in between (the
        # server killed, a disk full) leaves the run to the next pass, never half pruned.
        state.trajectories = await asyncio.to_thread(
            _tidy, config.state_dir, state, retention.trajectories
        )
        tenant = store.for_tenant(record.tenant)
        await RunBook(tenant).save(state, touch=False)  # it still ended when it ended
        await tenant.runs.prune_events(state.id)
        pruned.append(state.id)
    await store.deliveries.prune(ended_before)  # redelivered that late, it is asked again
    await store.threads.prune(ended_before)  # a mention there that late starts afresh
    return pruned


def _tidy(state_dir: Path, state: RunState, trajectories_go: str) -> list[str]:
    """Remove the run's directory, its trajectories first kept or archived; where they are
    now."""
    run_dir = state_dir / "runs" / state.id
    kept = [t for t in state.trajectories if Path(t).parent != run_dir]  # moved already
    trajectories = [Path(t) for t in state.trajectories if Path(t).parent == run_dir]
    trajectories = [t for t in trajectories if t.is_file() and not t.is_symlink()]
    if trajectories_go == "keep" and trajectories:
        target = state_dir / "trajectories" / state.id
        target.mkdir(parents=True, exist_ok=True)
        for trajectory in trajectories:
            kept.append(str(shutil.move(trajectory, target / trajectory.name)))
    elif trajectories_go == "archive" and trajectories:
        archive = state_dir / "archive" / f"{state.id}.tar.gz"
        archive.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive, "w:gz") as packed:
            for trajectory in trajectories:
                packed.add(trajectory, arcname=trajectory.name)
        kept.append(str(archive))
    shutil.rmtree(run_dir, ignore_errors=True)
    return kept
