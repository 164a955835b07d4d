"""Agent steps: the built-in loop (or an external CLI agent) in the run's box."""

from __future__ import annotations

from typing import Literal

from golem.agent import Agent, make_tools
from golem.agent.events import AgentOutcome
from golem.blueprint.execution import Execution
from golem.blueprint.model import AgentNode, AgentSettings, Blueprint, CINode, LoopNode
from golem.blueprint.steps.briefing import verification_of, verifying_checks
from golem.blueprint.steps.follow_up import reply_tool
from golem.blueprint.steps.host import CONTEXT_BUDGET
from golem.blueprint.template import render
from golem.context.toolshed.budget import fit_context
from golem.context.toolshed.selection import check_patterns, parse_patterns
from golem.core.config import GolemConfig
from golem.core.errors import BudgetSpent

__all__ = ["check_toolshed", "run_agent", "run_agent_node", "template_values", "toolshed_steps"]


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
    nothing left for it (a note says so)."""
    try:
        budget = ex.step_budget(settings.budget)
    except BudgetSpent as spent:
        ex.note(f"{node}: not started: {spent.reason}", node)
        return None
    box = await ex.box()
    prompt = render(settings.prompt, template_values(ex, **values))
    trajectory = ex.trajectory_path(node)
    ex.state.trajectories.append(str(trajectory))
    ex.save()
    sink = ex.agent_sink(node)
    verification = verification_of(ex, box)
    if settings.external is not None:
        from golem.agent.external import ExternalAgent  # noqa: PLC0415 - optional CLIs

        runner = ExternalAgent(
            settings.external, model=settings.model, budget=budget, on_event=sink
        )
        outcome = await runner.run(
            box, prompt, context=ex.state.context, trajectory=trajectory, verification=verification
        )
    else:
        tools = make_tools(settings.tools)
        if ex.state.request.follow_up is not None and ex.state.pr is None:
            tools.append(await reply_tool(ex))  # replies are posted at ship: until then
        context = ex.state.context
        if settings.toolshed:
            shed = await ex.toolshed.tools(box, settings.toolshed)
            context = fit_context(context, [tool.spec for tool in shed], CONTEXT_BUDGET)
            tools += shed
        agent = Agent(ex.model(settings.model), tools, budget=budget, on_event=sink)
        outcome = await agent.run(
            box, prompt, context=context, trajectory=trajectory, verification=verification
        )
    ex.charge(outcome.usage, outcome.cost_usd, outcome.turns)
    if outcome.status == "done":
        ex.state.summary = outcome.summary
    await ex.sync()
    return outcome


async def run_agent_node(
    ex: Execution, node: AgentNode
) -> tuple[Literal["success", "failure"], str]:
    """An agent node: ``success`` when the agent finished."""
    outcome = await run_agent(ex, node.id, node)
    if outcome is None:
        return "failure", "the run's budget is spent"
    result: Literal["success", "failure"] = "success" if outcome.status == "done" else "failure"
    return result, f"{outcome.status}: {outcome.reason}"
