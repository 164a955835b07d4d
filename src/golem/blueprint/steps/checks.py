"""The repository's own checks (setup, lint, build, test), run in the run's box."""

from __future__ import annotations

from typing import Literal

from golem.agent import OutputStream
from golem.blueprint.events import CheckFinished, CheckOutput
from golem.blueprint.execution import Execution
from golem.blueprint.model import BoxNode
from golem.checks import CheckResult, describe_failure
from golem.checks import run_check as run_in_box
from golem.sandbox import Box

__all__ = ["GOAL", "commands_of", "run_box_node", "run_check", "run_checks"]

TAIL_IN_ERROR = 20
GOAL = "goal"
"""The check a goal loop's run verifies its goal with (``RunRequest.goal_check``)."""


def commands_of(ex: Execution, names: list[str]) -> list[tuple[str, str]]:
    """(check name, command) pairs: a name of the repo's conventions expands to its
    commands (but those dropped, whose preparation failed); anything else is a shell
    command of its own."""
    conventions = ex.state.conventions
    dropped = {(check.name, check.command) for check in ex.state.dropped}
    pairs: list[tuple[str, str]] = []
    for name in names:
        if name == GOAL:
            goal = ex.state.request.goal_check
            pairs.extend([(GOAL, goal)] if goal else [])
        elif name in ("install", "setup", "lint", "build", "test"):
            commands = getattr(conventions, name) if conventions is not None else []
            pairs.extend((name, c) for c in commands if (name, c) not in dropped)
        else:
            pairs.append((name, name))
    return pairs


async def run_checks(
    ex: Execution,
    node: str,
    names: list[str],
    *,
    round_: int = 0,
    stop_at_failure: bool = False,
    timeout: float | None = None,
    box: Box | None = None,
) -> list[CheckResult]:
    """Run the checks in ``box`` (default: the run's box); each one's output streams into
    the run's events as it comes (CheckOutput), then its result is an event
    (CheckFinished)."""
    results: list[CheckResult] = []
    for name, command in commands_of(ex, names):
        result = await run_check(ex, node, name, command, round_=round_, timeout=timeout, box=box)
        results.append(result)
        if stop_at_failure and not result.passed:
            break
    return results


async def run_check(
    ex: Execution,
    node: str,
    name: str,
    command: str,
    *,
    round_: int = 0,
    timeout: float | None = None,
    box: Box | None = None,
) -> CheckResult:
    """Run one check in ``box`` (default: the run's box): its output live (CheckOutput),
    its result (its failures parsed, the reason it failed) an event (CheckFinished)."""

    def live(stream: OutputStream, text: str) -> None:
        ex.emit(
            CheckOutput(
                run_id=ex.state.id,
                node=node,
                round=round_,
                check=name,
                command=command,
                stream=stream,
                text=text,
            )
        )

    box = box or await ex.box()
    result = await run_in_box(
        box, name, command, live=live, secrets=ex.secrets.values, timeout=timeout
    )
    ex.emit(CheckFinished(run_id=ex.state.id, node=node, round=round_, check=result))
    return result


async def run_box_node(ex: Execution, node: BoxNode) -> tuple[Literal["success", "failure"], str]:
    """A box node: its commands in order, stopping at the first that fails. Their results
    are the run's ``prepared`` ones; a failure is the run's ``error``, saying what failed."""
    names: list[str] = [node.check] if node.check else list(node.run)
    if names == ["setup"]:
        await ex.box()  # a box from a prepared snapshot may have run it already
        started = ex.state.started_from
        if started is not None and started.setup_skipped:
            ex.note(f"setup: as prepared in {started.describe()}", node.id)
            return "success", "as prepared"
    results = await run_checks(ex, node.id, names, stop_at_failure=True)
    await ex.mark_dependencies()  # what these commands did to them is the run's own
    await ex.sync()
    ran = {(result.name, result.command) for result in results}
    state = ex.state
    state.prepared = [r for r in state.prepared if (r.name, r.command) not in ran] + results
    failed = [result for result in results if not result.passed]
    if failed:
        state.error = f"{node.id} failed: {describe_failure(failed[0], tail=TAIL_IN_ERROR)}"
        ex.save()
        return "failure", f"failed: {', '.join(result.name for result in failed)}"
    ex.save()
    return "success", f"{len(results)} command(s) passed"
