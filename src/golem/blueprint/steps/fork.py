"""A box node run in a fork of the run's box (``fork: true``): its commands try something
in a copy of the box's files (docs/snapshots.md#forks), their output and results are the
run's events and choose the next node, and the copy is thrown away: nothing it did reaches
the run's box, its checkout or its prepared results.

The run's box holds the host's ``.git``, which never crosses from a box: it is set aside
for the copy and placed again from the host in the run's box and in the fork."""

from __future__ import annotations

from typing import Literal

from golem.blueprint.dependencies import cache_paths, in_checkout
from golem.blueprint.execution import Execution
from golem.blueprint.model import BoxNode
from golem.blueprint.prepared import git_set_aside, place_git
from golem.blueprint.steps.checks import run_checks

__all__ = ["run_in_fork"]


async def run_in_fork(ex: Execution, node: BoxNode) -> tuple[Literal["success", "failure"], str]:
    """The node's commands in a fork of the run's box, stopping at the first that fails;
    the fork removed after, whatever happened."""
    names: list[str] = [node.check] if node.check else list(node.run)
    box = await ex.box()
    conventions = ex.state.conventions
    excluded = in_checkout(cache_paths(conventions)) if conventions is not None else []
    async with git_set_aside(box, ex.workspace, excluded=excluded):
        fork = await ex.engine.fork(box.id)
    try:
        ex.note(
            f"{node.id} runs in a fork of the run's box ({fork.id}), thrown away after", node.id
        )
        await place_git(fork, ex.workspace, excluded=excluded)
        results = await run_checks(ex, node.id, names, stop_at_failure=True, box=fork)
    finally:
        await ex.engine.remove_session(fork.id)
    failed = [result for result in results if not result.passed]
    if failed:
        return "failure", f"failed in a fork, thrown away: {failed[0].name}"
    return "success", f"{len(results)} command(s) passed in a fork, thrown away"
