"""reply: in a follow-up run, the agent answers a review thread (or the conversation).

The tool only records the reply on the host: it touches nothing in the box and never calls
the forge; the run posts what was recorded once its commits are pushed (ship).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.core.errors import ToolProblem
from golem.sandbox import Box

__all__ = ["ReplyArguments", "ReplyTool"]

DESCRIPTION = """Reply to a review thread of the pull request you are working on (thread: \
its id, as the task lists it), or on its conversation (thread: null). Reply to each thread \
you addressed: say what you changed, or why you did not. Replies are posted after your \
commits are pushed."""


class ReplyArguments(BaseModel):
    """Arguments of ``reply``."""

    model_config = ConfigDict(extra="forbid")

    thread: str | None = Field(
        None, description="The review thread's id; null: the pull request's conversation."
    )
    body: str = Field(min_length=1, description="The reply, in Markdown.")


class ReplyTool(BoxTool[ReplyArguments]):
    """Records a reply for ``record(thread, body)``; a thread id not in ``threads`` is
    refused with the valid ones."""

    def __init__(self, threads: Sequence[str], record: Callable[[str | None, str], None]) -> None:
        super().__init__("reply", DESCRIPTION, ReplyArguments)
        self.threads = list(threads)
        self._record = record

    async def act(self, box: Box, arguments: ReplyArguments) -> ToolResult:
        """Record the reply (the box is not used)."""
        thread = arguments.thread
        if thread is not None and thread not in self.threads:
            valid = ", ".join(self.threads) or "none (use thread: null for the conversation)"
            raise ToolProblem(f"there is no review thread {thread!r}; the threads are: {valid}")
        self._record(thread, arguments.body.strip())
        where = f"thread {thread}" if thread is not None else "the conversation"
        return ToolResult(f"reply to {where} recorded; it is posted once your commits are pushed")
