"""The ``keep-prepared`` step of the ``prepare`` blueprint: the configured warm-up run in
the run's box, then the box kept as its tenant's prepared snapshot of the repository's
base branch (docs/snapshots.md#prepared-repositories).

Every repository's ``.git`` is removed from the box first: a snapshot refuses any, and the
host holds the repository (a run's box gets the host's). Anything else the box holds is
checked as every snapshot is (``golem.sandbox.keep``): a ``.git`` planted anywhere, a
setuid file or a FIFO refuses it, and the record and the snapshot before stay as they were.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from golem.blueprint.dependencies import image_of, read_inputs
from golem.blueprint.execution import Execution
from golem.blueprint.lifecycle import mark_failed
from golem.blueprint.prepared import PreparedRecord, PreparedRepos, snapshot_name
from golem.blueprint.workspace import layout_of
from golem.core.errors import SnapshotUnsupported, UnsafeBoxOutput
from golem.core.spec import WORKSPACE
from golem.sandbox import ExecRequest

__all__ = ["keep_prepared"]

Result = tuple[Literal["success", "failure"], str]


async def keep_prepared(ex: Execution, node: str) -> Result:
    """Warm the run's box up, then keep it as the prepared snapshot of its repository."""
    state, settings = ex.state, ex.config.prepared
    if state.error:  # the install or the setup failed: nothing is kept
        return _failed(ex, state.error)
    box = await ex.box()
    if settings.warmup:
        ran = await box.execute(
            ExecRequest(
                cmd=["sh", "-c", settings.warmup],
                workdir=WORKSPACE,
                timeout=settings.warmup_timeout,
            )
        )
        if ran.exit_code != 0:
            tail = (ran.stderr_text or ran.stdout_text).strip()[-500:]
            return _failed(
                ex,
                f"the warm-up ({settings.warmup[:80]}) failed (exit {ran.exit_code}): {tail}; "
                "fix [prepared] warmup",
            )
    layout = await asyncio.to_thread(layout_of, ex.workspace)
    gits = [f"{WORKSPACE}/{path}/.git".replace("//", "/") for path in layout.repositories]
    removed = await box.execute(ExecRequest(cmd=["rm", "-rf", "--", *gits], timeout=300))
    if removed.exit_code != 0:
        return _failed(ex, f"could not remove the box's .git: {removed.stderr_text[-300:]}")
    spec = ex.box_spec()
    image = image_of(spec, ex.config)
    name = snapshot_name(state.request.repo, state.base, image)
    try:
        info = await ex.engine.snapshot(box.id, name)
    except (UnsafeBoxOutput, SnapshotUnsupported) as exc:
        return _failed(ex, f"the prepared box was not kept: {exc.message}")
    conventions = state.conventions
    lockfiles = (
        await asyncio.to_thread(
            read_inputs, ex.workspace, conventions.install, conventions.cache_keys
        )
        if conventions is not None
        else {}
    )
    record = PreparedRecord(
        tenant=ex.tenant,
        repo=state.request.repo,
        branch=state.base,
        commit=await ex.repo().head() or "",
        name=info.name,
        digest=info.digest,
        image=image,
        dependencies=state.dependencies,
        lockfiles=lockfiles,
    )
    PreparedRepos(ex.config).save(record)
    ex.note(f"prepared snapshot {info.name} (sha256:{info.digest[:12]}) at {record.commit[:12]}")
    await ex.close()  # its box has no .git any more: no later step may use it
    return "success", f"{info.name} at {record.commit[:12]}"


def _failed(ex: Execution, message: str) -> Result:
    """The prepare run fails, the snapshot and record before it kept as they were."""
    mark_failed(ex.state, message)
    ex.save()
    return "failure", message
