"""Checkpoints: a run's checkout kept in the store after each node, so that a run whose
machine died resumes on another one (a Ray cluster's node) from its last finished node.

On one machine a run's checkout stays on its disk and a resumed run finds it there: no
checkpoint is needed. A runner given ``Checkpoints`` keeps the checkout in this machine's
state directory, saves it (``golem.forge.snapshot``: the commits and work tree the remote
lacks) after every node, makes it again from the last save when the run is resumed, and
forgets it when the run ends. Dependencies a run installed on the dead machine are
installed again here (the key is read from the same commit, which is on the base branch's
history there too when it was on it here, so it is the same key).
"""

from __future__ import annotations

import asyncio
import logging
import shutil

from golem.blueprint.dependencies import DependencyCache
from golem.blueprint.execution import Execution
from golem.blueprint.model import HostNode
from golem.blueprint.steps.install import run_install
from golem.core.errors import DependenciesGone
from golem.forge.snapshot import restore_checkout, snapshot_checkout

__all__ = ["Checkpoints"]

log = logging.getLogger("golem.blueprint.checkpoint")


class Checkpoints:
    """Save and restore runs' checkouts through their store (see the module)."""

    async def begin(self, ex: Execution, *, resumed: bool) -> None:
        """Before the run's first node on this machine: its checkout is this machine's;
        a resumed run's is made again from its checkpoint (a stale one left here by an
        earlier attempt is replaced: the checkpoint is what the run had finished)."""
        workspace = ex.run_dir / "repo"
        ex.state.workspace = str(workspace)
        if not resumed:
            return
        saved = await ex.book.store.checkpoints.load(ex.state.id)
        if workspace.exists():
            await asyncio.to_thread(shutil.rmtree, workspace)
        if saved is None:
            return  # no node had a checkout yet: the run's prepare makes it
        workspace.parent.mkdir(parents=True, exist_ok=True)
        repo = ex.repo()
        await repo.clone_from(ex.state.request.repo)
        await restore_checkout(repo, saved.data)
        ex.note(f"the checkout as node {saved.node} left it, made again on this machine")
        await self._dependencies(ex)

    async def _dependencies(self, ex: Execution) -> None:
        """Install again, on this machine, what the run installed on the one it left."""
        key = ex.state.dependencies
        if key is None or DependencyCache(ex.config).path(key).exists():
            return
        node = next(
            (n.id for n in ex.blueprint.nodes if isinstance(n, HostNode) and n.action == "install"),
            "install",
        )
        outcome, detail = await run_install(ex, node)
        if outcome != "success" or ex.state.dependencies != key:
            raise DependenciesGone(
                f"the run's dependencies could not be installed again on this machine "
                f"({detail}); start the run again"
            )
        ex.note(f"dependencies installed again on this machine: {detail}", node)

    async def save(self, ex: Execution, node: str) -> None:
        """Keep the checkout as node ``node`` left it (nothing before it exists)."""
        if not (ex.workspace / ".git").is_dir():
            return
        data = await snapshot_checkout(ex.repo())
        if data is not None:
            store, run_id, claim = ex.book.store, ex.state.id, ex.state.claim
            ex.writes.put(lambda: store.checkpoints.save(run_id, node, data, claim))
            await ex.writes.flush()

    async def end(self, ex: Execution) -> None:
        """The run ended: its checkpoint goes."""
        store, run_id, claim = ex.book.store, ex.state.id, ex.state.claim
        ex.writes.put(lambda: store.checkpoints.delete(run_id, claim))
        await ex.writes.flush()
