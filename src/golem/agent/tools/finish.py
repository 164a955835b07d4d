"""finish: the agent says it is done, with a summary of what it did."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.sandbox import Box

__all__ = ["FinishArguments", "FinishTool"]

DESCRIPTION = """Call this once the task is done (or cannot be done) to end your work. \
The summary says what you changed and how you checked it, or why you stopped."""


class FinishArguments(BaseModel):
    """Arguments of ``finish``."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, description="What was done, checked, or left open.")


class FinishTool(BoxTool[FinishArguments]):
    """Ends the agent's work; touches nothing in the box."""

    def __init__(self) -> None:
        super().__init__("finish", DESCRIPTION, FinishArguments)

    async def act(self, box: Box, arguments: FinishArguments) -> ToolResult:
        """Hand the summary back, marked as finished."""
        return ToolResult(arguments.summary, finished=True)
