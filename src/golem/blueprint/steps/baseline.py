"""The baseline: a loop's checks on the base commit, so that the loop can tell what already
failed from what the change broke.

Its node records the box's working tree before the agent changes anything (a git tree id,
see ``tree``), and takes what the cache knows of this base. A check that fails in the loop
and has no baseline yet is then run on that tree: the box's tree is put back to the base,
the check runs, and the tree is put back to the change. A change whose checks pass never
pays for a baseline. Results are cached per repository, base commit, installed
dependencies, image, setup commands and environment (``golem.checks.history``).

One exception pays for it before the agent: a box with a container engine whose image
cache had no entry (``Execution.images_cold``). Its tests may pull images of their own
(testcontainers, the docker SDK, a compose file): the node runs the loop's checks on the
base tree now, those it has no result for, keeps their results as the baseline (the loop
then never runs them on the base), puts the tree back, and keeps the images the engine
then holds, before any agent acted (``golem.blueprint.images``).
"""

from __future__ import annotations

from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.model import BoxNode, LoopNode
from golem.blueprint.steps.checks import GOAL, commands_of, run_check
from golem.checks import (
    CheckResult,
    baseline_key,
    fingerprint,
    load_baseline,
    restore,
    store_baseline,
)
from golem.core.errors import SandboxError

__all__ = ["base_result", "cache_paths", "run_baseline"]


async def run_baseline(ex: Execution, node: BoxNode) -> tuple[Literal["success"], str]:
    """Record the tree before any change, and what the cache knows of this base."""
    state = ex.state
    if state.base_tree is None:  # a resumed run keeps the one it recorded
        state.base_tree = await fingerprint(await ex.box(), exclude=cache_paths(ex))
    cached = load_baseline(ex.config.state_dir, await _key(ex))
    known = {(r.name, r.command) for r in state.baseline or []}
    state.baseline = [
        *(state.baseline or []),
        *(r for r in cached if (r.name, r.command) not in known),
    ]
    ex.save()
    if cached:
        ex.note(
            f"baseline: {len(cached)} check result(s) of this base reused from the cache", node.id
        )
    if ex.images_cold:
        await _pull_images(ex, node)
    return "success", f"base tree {state.base_tree[:12]}; {len(state.baseline)} result(s) known"


async def base_result(
    ex: Execution, loop: str, name: str, command: str, *, tree: str
) -> CheckResult | None:
    """The check's result on the base commit: known, or run now on the base tree (the
    box's tree, ``tree``, put back after); None when there is no base tree to run it on."""
    state = ex.state
    known = next((r for r in state.baseline or [] if (r.name, r.command) == (name, command)), None)
    if known is not None or state.base_tree is None:
        return known
    node = _baseline_node(ex, loop)
    box = await ex.box()
    exclude = cache_paths(ex)
    try:
        await restore(box, state.base_tree, exclude=exclude)
    except SandboxError as exc:  # a resumed run's new box lacks the base tree's objects
        ex.note(
            f"baseline: cannot go back to the base tree ({exc.message}); "
            "failures are not compared with the base",
            node,
        )
        state.base_tree = None
        return None
    try:
        result = await run_check(ex, node, name, command)
    finally:
        await restore(box, tree, exclude=exclude)
    state.baseline = [*(state.baseline or []), result]
    ex.save()
    if not result.timed_out:  # a timeout may not come again
        store_baseline(ex.config.state_dir, await _key(ex), result)
    return result


async def _pull_images(ex: Execution, node: BoxNode) -> None:
    """The loop's checks not known on this base, run on it now (their results its
    baseline); then the images the engine holds kept."""
    state, box = ex.state, await ex.box()
    loop = ex.blueprint.node(node.baseline or "")
    names = [*loop.checks, GOAL] if isinstance(loop, LoopNode) else []
    known = {(r.name, r.command) for r in state.baseline or []}
    pairs = [pair for pair in commands_of(ex, names) if pair not in known]
    if pairs and state.base_tree is not None:
        ex.note(
            "images: none cached for this box; the checks run on the base first, so that "
            "the images they pull are kept",
            node.id,
        )
        key = await _key(ex)
        try:
            for name, command in pairs:
                result = await run_check(ex, node.id, name, command)
                state.baseline = [*(state.baseline or []), result]
                if not result.timed_out:
                    store_baseline(ex.config.state_dir, key, result)
        finally:
            await restore(box, state.base_tree, exclude=cache_paths(ex))
        ex.save()
    await ex.keep_cold_images(box)


def _baseline_node(ex: Execution, loop: str) -> str:
    """The id of the node that takes the loop's baseline (its events carry it)."""
    return next(
        (n.id for n in ex.blueprint.nodes if isinstance(n, BoxNode) and n.baseline == loop),
        loop,
    )


def cache_paths(ex: Execution) -> list[str]:
    """What the dependency install made in the tree (not in golem's home, outside it):
    never part of a change."""
    conventions = ex.state.conventions
    paths = list(conventions.cache) if conventions is not None else []
    return [path for path in paths if not path.startswith("/")]


async def _key(ex: Execution) -> str:
    """The base as the cache knows it (the commit checked out on the host is the base
    until ship commits)."""
    state = ex.state
    conventions = state.conventions
    box = await ex.box()
    parts = {
        "tenant": ex.book.store.tenant or "",
        "repo": state.request.repo,
        "base": await ex.repo().head(),
        "dependencies": state.dependencies,
        "image": box.spec.image,
        "setup": conventions.setup if conventions is not None else [],
        "env": conventions.env if conventions is not None else {},
    }
    return baseline_key(parts)
