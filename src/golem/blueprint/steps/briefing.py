"""What an agent step is told about how its work is verified: the commands the run's
verifying loops will run, in the run's box, with what the box has ready for them."""

from __future__ import annotations

from golem.agent import Verification, command_line
from golem.blueprint.execution import Execution
from golem.blueprint.model import LoopNode
from golem.blueprint.steps.checks import GOAL, commands_of
from golem.checks import CHECK_STEPS, reach
from golem.sandbox import Box

__all__ = ["verification_of", "verifying_checks", "verifying_commands"]

PREPARING = ("install", "setup")
"""Steps that make the box ready rather than verify a change."""
NOTHING_VERIFIES = "(none: golem found no command that verifies this repository)"


def verifying_commands(ex: Execution) -> list[tuple[str, str]]:
    """(check name, command) of what the blueprint's loops verify with, in order, each
    once (a goal loop's goal last); a blueprint without a loop is taken to verify with
    lint, build and test."""
    names = [
        name
        for node in ex.blueprint.nodes
        if isinstance(node, LoopNode)
        for name in node.checks
        if name not in PREPARING
    ]
    pairs = commands_of(ex, [*(names or CHECK_STEPS), GOAL])
    return list(dict.fromkeys(pairs))


def verifying_checks(ex: Execution) -> str:
    """The ``{{ checks }}`` of a prompt before any verification: one line per command."""
    pairs = verifying_commands(ex)
    return "\n".join(command_line(name, command) for name, command in pairs) or NOTHING_VERIFIES


def verification_of(ex: Execution, box: Box) -> Verification:
    """How the run will verify an agent step's work, as its prompt says it."""
    state = ex.state
    conventions = state.conventions
    installs = [result for result in state.prepared if result.name == "install"]
    ran = state.dependencies is not None or bool(installs)
    installed = (
        conventions is not None
        and bool(conventions.install)
        and ran
        and all(result.passed for result in installs)
    )
    failing = [result for result in state.baseline or [] if not result.passed]
    return Verification(
        commands=verifying_commands(ex),
        workdir=box.spec.workdir or "/workspace",
        installed_by=list(conventions.install) if installed and conventions else [],
        installed_into=list(conventions.cache) if installed and conventions else [],
        env=dict(conventions.env) if conventions is not None else {},
        network=box.spec.network,
        already_failing=list(dict.fromkeys((r.name, r.command) for r in failing)),
        services=[reach(service) for service in ex.services_up],
    )
