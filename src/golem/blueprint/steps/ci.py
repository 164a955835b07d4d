"""CI rounds: wait for the forge's verdict on the pushed commit, fix, push, wait again.

Scaffolding until issue 16's CI part lands (helper i16-ci writes it)."""

from __future__ import annotations

from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.model import CINode

__all__ = ["run_ci"]


async def run_ci(ex: Execution, node: CINode) -> tuple[Literal["success", "failure"], str]:
    """Wait for CI on the run's pushed commit; fix at most ``node.ci_rounds`` times."""
    raise NotImplementedError
