"""What a goal loop's iteration asks for: the run request (the first iteration's, on a new
branch; later ones as follow-ups on the pull request the first opened, starting from the
last one's result), and the task it is told."""

from __future__ import annotations

from golem.blueprint import RunRequest
from golem.blueprint.state import FollowUp
from golem.forge import markdown
from golem.service.loops.model import GoalLoop

__all__ = ["iteration_request", "iteration_task"]

SHOWN_FAILING = 10


def iteration_task(loop: GoalLoop, number: int) -> str:
    """What iteration ``number`` is asked: the goal, how it is checked, and what the check
    said last (failing test names are the box's words: code, never markdown of their own)."""
    request = loop.request
    parts = [
        request.goal.strip(),
        f"golem works toward this goal in a loop (iteration {number} of "
        f"{request.max_iterations}): it holds once {markdown.code(request.until)} exits 0 in "
        "the repository's box. golem runs that command as the check named goal after the "
        "repository's own checks.",
    ]
    last = next((i.measure for i in reversed(loop.iterations) if i.measure), loop.baseline)
    if last is not None:
        said = f"The goal check now: {last.said()}."
        if last.failing:
            names = ", ".join(markdown.code(name) for name in last.failing[:SHOWN_FAILING])
            said += f" Failing: {names}."
        parts.append(said)
    return "\n\n".join(parts)


def iteration_request(loop: GoalLoop, number: int) -> RunRequest:
    """The run of iteration ``number``: what is left of the budget, the goal as its goal
    check, on the loop's pull request once there is one."""
    request = loop.request
    task = iteration_task(loop, number)
    left = loop.left_usd()
    common = {
        "repo": request.repo,
        "model": request.model,
        "forge": request.forge,
        "budget_usd": left,
        "goal_check": request.until,
        "tier": request.tier,
    }
    if loop.pr is None:
        return RunRequest.model_validate(
            {**common, "task": task, "blueprint": request.blueprint, "base": request.base}
        )
    first = loop.iterations[0].run_id if loop.iterations else None
    follow_up = FollowUp(
        repo=loop.pr.repo,
        number=loop.pr.number,
        parent_run=first,
        request=task,
        requested_by="golem loop",
    )
    return RunRequest.model_validate(
        {**common, "blueprint": request.follow_up_blueprint, "follow_up": follow_up}
    )
