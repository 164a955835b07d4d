"""What runs a node: one table from a node's kind to its step, and one from a host node's
action to its step (``steps/host``). A new kind or action is one entry there (and its
model in ``golem.blueprint.model``); the runner only asks ``run_step``.

A follow-up run's blueprint names its own host actions (``checkout_pull_request``,
``read_review``, ``answer_review``, ``escalate_review``), so its YAML says what runs;
``host_actions_for`` refuses them in a run with no pull request to follow up, and reads a
follow-up blueprint written before they existed (its runs resumed, a custom one) with
``prepare``, ``hydrate``, ``ship`` and ``escalate`` as the follow-up's own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar, cast

from golem.blueprint.execution import Execution
from golem.blueprint.model import (
    FOLLOW_UP_ACTIONS,
    AgentNode,
    Blueprint,
    BoxNode,
    CINode,
    GateNode,
    HostAction,
    HostNode,
    LoopNode,
    Node,
    Outcome,
)
from golem.blueprint.state import RunRequest
from golem.blueprint.steps.attempts import run_agent_or_attempts
from golem.blueprint.steps.baseline import run_baseline
from golem.blueprint.steps.checks import run_box_node
from golem.blueprint.steps.ci import run_ci
from golem.blueprint.steps.fork import run_in_fork
from golem.blueprint.steps.gate import run_gate
from golem.blueprint.steps.host import HOST_ACTIONS
from golem.blueprint.steps.loop import run_loop
from golem.core.errors import InvalidRequest

__all__ = ["HOST_ACTIONS", "LEGACY_FOLLOW_UP", "NODE_KINDS", "host_actions_for", "run_step"]

Step = Callable[[Execution, Node], Awaitable[tuple[Outcome, str]]]
N = TypeVar("N", HostNode, BoxNode, AgentNode, GateNode, LoopNode, CINode)


def _step(
    kind: type[N], step: Callable[[Execution, N], Awaitable[tuple[Outcome, str]]]
) -> tuple[str, Step]:
    """An entry of NODE_KINDS: ``kind``'s name and its step, typed to take that kind."""
    name = kind.model_fields["kind"].default
    assert isinstance(name, str)
    return name, cast(Step, step)


async def _box(ex: Execution, node: BoxNode) -> tuple[Outcome, str]:
    if node.fork:
        return await run_in_fork(ex, node)
    run = run_baseline if node.baseline is not None else run_box_node
    return await run(ex, node)


async def _gate(ex: Execution, node: GateNode) -> tuple[Outcome, str]:
    decision = await run_gate(ex, node)
    return decision, decision


async def _loop(ex: Execution, node: LoopNode) -> tuple[Outcome, str]:
    looped = await run_loop(ex, node)
    unverified = "; not verified" if ex.state.unverified else ""
    return looped, f"{ex.state.rounds} fix round(s){unverified}"


async def _host(ex: Execution, node: HostNode) -> tuple[Outcome, str]:
    return await HOST_ACTIONS[node.action](ex, node)


NODE_KINDS: Mapping[str, Step] = dict(
    [
        _step(HostNode, _host),
        _step(BoxNode, _box),
        _step(AgentNode, run_agent_or_attempts),
        _step(GateNode, _gate),
        _step(LoopNode, _loop),
        _step(CINode, run_ci),
    ]
)
"""The step of each node kind."""


async def run_step(ex: Execution, node: Node) -> tuple[Outcome, str]:
    """Run ``node``'s step: its outcome, and what it says of it."""
    return await NODE_KINDS[node.kind](ex, node)


LEGACY_FOLLOW_UP: Mapping[HostAction, HostAction] = {
    "prepare": "checkout_pull_request",
    "hydrate": "read_review",
    "ship": "answer_review",
    "escalate": "escalate_review",
}
"""What a follow-up blueprint written before the follow-up actions meant by its actions."""


def host_actions_for(blueprint: Blueprint, request: RunRequest) -> Blueprint:
    """``blueprint`` as ``request`` runs it: a follow-up action in a run with no pull
    request to follow up is InvalidRequest; a follow-up's blueprint that names none of them
    (written before they existed) gets them in place of the actions they replace."""
    hosts = [node for node in blueprint.nodes if isinstance(node, HostNode)]
    if request.follow_up is None:
        for node in hosts:
            if node.action in FOLLOW_UP_ACTIONS:
                raise InvalidRequest(
                    f"blueprint {blueprint.name!r}: node {node.id!r} ({node.action}) answers "
                    "the review of a pull request, and this run follows none up; give the "
                    "pull request (`golem run --pr`, `follow_up` in the request) or use a "
                    "blueprint without review actions"
                )
        return blueprint
    if any(node.action in FOLLOW_UP_ACTIONS for node in hosts):
        return blueprint
    nodes = [
        node.model_copy(update={"action": LEGACY_FOLLOW_UP[node.action]})
        if isinstance(node, HostNode) and node.action in LEGACY_FOLLOW_UP
        else node
        for node in blueprint.nodes
    ]
    return blueprint.model_copy(update={"nodes": nodes})
