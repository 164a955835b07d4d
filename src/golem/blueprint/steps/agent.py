"""Agent steps: the built-in loop (or an external CLI agent) in the run's box.

A built-in agent whose model provider stays down pauses the run (``ProviderDown``) with its
work kept: its changes brought back to the checkout, its spending charged, its place in
``RunState.pause``. The resumed run's step goes on from its conversation (the run's
events), with what is left of its budget."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Literal

from golem.agent import Agent, Budget, Resumed, conversation_of, make_tools
from golem.agent.events import AgentOutcome
from golem.blueprint.events import AgentStep
from golem.blueprint.execution import Execution
from golem.blueprint.model import AgentNode, AgentSettings, Blueprint, CINode, LoopNode
from golem.blueprint.state import PausedStep
from golem.blueprint.steps.briefing import verification_of, verifying_checks
from golem.blueprint.steps.follow_up import reply_tool
from golem.blueprint.steps.host import CONTEXT_BUDGET
from golem.blueprint.template import render
from golem.context.toolshed.budget import fit_context
from golem.context.toolshed.selection import check_patterns, parse_patterns
from golem.core.config import GolemConfig
from golem.core.errors import BudgetSpent, ConfigError, ProviderDown

__all__ = [
    "check_toolshed",
    "paused_step",
    "run_agent",
    "run_agent_node",
    "template_values",
    "toolshed_steps",
]


def toolshed_steps(blueprint: Blueprint) -> list[tuple[str, AgentSettings]]:
    """Every agent step of ``blueprint`` that names toolshed tools, with its node's id
    (a loop's or a CI node's fix agent is ``NODE.fix``)."""
    steps: list[tuple[str, AgentSettings]] = []
    for node in blueprint.nodes:
        if isinstance(node, AgentNode):
            steps.append((node.id, node))
        elif isinstance(node, LoopNode | CINode):
            steps.append((f"{node.id}.fix", node.fix))
    return [(name, settings) for name, settings in steps if settings.toolshed]


def check_toolshed(blueprint: Blueprint, config: GolemConfig) -> None:
    """ConfigError when a step's toolshed pattern names a server the configuration does
    not have (before any box starts)."""
    for name, settings in toolshed_steps(blueprint):
        where = f"blueprint {blueprint.name!r}, step {name}"
        check_patterns(parse_patterns(settings.toolshed), config.toolshed, where)
        if settings.external is not None:
            from golem.agent.external import ExternalAgent, check_mcp  # noqa: PLC0415

            try:
                check_mcp(ExternalAgent(settings.external).template)
            except ConfigError as error:
                raise ConfigError(f"{where}: {error.message}") from None


def template_values(ex: Execution, **extra: object) -> dict[str, object]:
    """What a prompt template may name (``checks``: the commands that will verify the
    step's work, unless a fix step gives the last verification's results)."""
    return {
        "task": ex.state.task_text,
        "repo": ex.state.request.repo,
        "branch": ex.state.branch,
        "checks": verifying_checks(ex),
        **extra,
    }


async def run_agent(
    ex: Execution, node: str, settings: AgentSettings, **values: object
) -> AgentOutcome | None:
    """Run an agent step and bring its changes back; None when the run's budget has
    nothing left for it (a note says so). A paused step of ``node`` goes on where it
    stopped; ProviderDown when the provider stays down (see the module)."""
    paused = paused_step(ex, node) if settings.external is None else None
    try:
        own = settings.budget if paused is None else _left_of(settings.budget, paused)
        budget = ex.step_budget(own)
    except BudgetSpent as spent:
        ex.note(f"{node}: not started: {spent.reason}", node)
        return None
    box = await ex.box()
    prompt = render(settings.prompt, template_values(ex, **values))
    if paused is None:
        trajectory = ex.trajectory_path(node)
        ex.state.trajectories.append(str(trajectory))
        ex.save()
    else:
        trajectory = Path(paused.trajectory)
    sink = ex.agent_sink(node)
    verification = verification_of(ex, box)
    context, shed = ex.state.context, []
    if settings.toolshed:  # the schemas count against the context budget, for a CLI too
        shed = await ex.toolshed.tools(box, settings.toolshed)
        context = fit_context(context, [tool.spec for tool in shed], CONTEXT_BUDGET)
    if settings.external is not None:
        from golem.agent.external import ExternalAgent  # noqa: PLC0415 - optional CLIs

        runner = ExternalAgent(
            settings.external, model=settings.model, budget=budget, on_event=sink
        )
        run = partial(
            runner.run,
            box,
            prompt,
            context=context,
            trajectory=trajectory,
            verification=verification,
        )
        if not settings.toolshed:
            outcome = await run()
        else:  # golem serves the step's tools to the CLI: its MCP gateway, the box's route
            from golem.context.toolshed.gateway import (  # noqa: PLC0415 - loads the MCP SDK
                tools_for_box,
            )

            async with tools_for_box(shed, box) as url:
                outcome = await run(mcp_url=url, mcp_tools=[tool.spec.name for tool in shed])
    else:
        tools = make_tools(settings.tools)
        if ex.state.request.follow_up is not None and ex.state.pr is None:
            tools.append(await reply_tool(ex))  # replies are posted at ship: until then
        agent = Agent(
            ex.model(settings.model),
            [*tools, *shed],
            budget=budget,
            on_event=sink,
            pause_when_down=True,
        )
        resume = await _conversation(ex, node) if paused is not None else None
        outcome = await agent.run(
            box,
            prompt,
            context=context,
            trajectory=trajectory,
            verification=verification,
            resume=resume,
        )
        if ex.state.pause is not None:
            ex.state.pause.step = None  # gone on with: a later step of the node is a new one
    ex.charge(outcome.usage, outcome.cost_usd, outcome.turns)
    if outcome.status == "done":
        ex.state.summary = outcome.summary
    await ex.sync()
    if outcome.status == "paused":
        ex.paused_step = _so_far(node, trajectory, paused, outcome)
        raise ProviderDown(outcome.reason, outcome.back_at)
    return outcome


def paused_step(ex: Execution, node: str) -> PausedStep | None:
    """The paused agent step of ``node`` the run goes on with, if it has one."""
    pause = ex.state.pause
    step = pause.step if pause is not None else None
    return step if step is not None and step.name == node else None


def _left_of(own: Budget, spent: PausedStep) -> Budget:
    """What a step's own budget has left after its work before the pause."""
    usage = spent.usage
    reading = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    left = {
        "turns": None if own.turns is None else own.turns - spent.turns,
        "input_tokens": None if own.input_tokens is None else own.input_tokens - reading,
        "output_tokens": (
            None if own.output_tokens is None else own.output_tokens - usage.output_tokens
        ),
        "usd": None if own.usd is None else own.usd - spent.cost_usd,
        "wall_seconds": None if own.wall_seconds is None else own.wall_seconds - spent.seconds,
    }
    gone = [name for name, value in left.items() if value is not None and value <= 0]
    if gone:
        raise BudgetSpent(f"the step's {', '.join(gone)} budget was spent before it paused")
    return Budget.model_validate(left)


async def _conversation(ex: Execution, node: str) -> Resumed | None:
    """The conversation of the paused step of ``node``, from the run's events (the store
    has them wherever the run resumes); None when they are gone."""
    await ex.writes.flush()
    events = [
        event.event
        for _, event in await ex.book.events(ex.state.id)
        if isinstance(event, AgentStep) and event.node == node
    ]
    messages, turns = conversation_of(events)
    return Resumed(messages, turns) if messages else None


def _so_far(
    node: str, trajectory: Path, before: PausedStep | None, outcome: AgentOutcome
) -> PausedStep:
    """A paused step's spending in all, its parts before earlier pauses included."""
    earlier = before or PausedStep(name=node, trajectory=str(trajectory))
    return PausedStep(
        name=node,
        trajectory=str(trajectory),
        turns=earlier.turns + outcome.turns,
        usage=earlier.usage + outcome.usage,
        cost_usd=earlier.cost_usd + outcome.cost_usd,
        seconds=earlier.seconds + outcome.duration,
    )


async def run_agent_node(
    ex: Execution, node: AgentNode
) -> tuple[Literal["success", "failure"], str]:
    """An agent node: ``success`` when the agent finished."""
    outcome = await run_agent(ex, node.id, node)
    if outcome is None:
        return "failure", "the run's budget is spent"
    result: Literal["success", "failure"] = "success" if outcome.status == "done" else "failure"
    return result, f"{outcome.status}: {outcome.reason}"
