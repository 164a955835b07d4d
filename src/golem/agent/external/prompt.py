"""The prompt golem gives an external CLI: how it works here, the context, the task.

The CLI keeps its own system prompt; golem's rules travel in the first message.
"""

from __future__ import annotations

from golem.agent.prompt import Verification, task_message

__all__ = ["UNATTENDED", "external_prompt"]

UNATTENDED = """\
You work alone and unattended in an isolated sandbox: nobody will answer questions or \
approve steps, so decide and act. Make the smallest change that fully solves the task, \
follow the repository's conventions, and verify it with the project's tests or checks \
when you can. Do not commit, push or create branches: that is done after your work is \
verified. End with a short summary of what you changed and why, or of what blocks you.
"""


def external_prompt(task: str, context: str = "", verification: Verification | None = None) -> str:
    """The first (and only) message of a one-shot run: how to work, how the work is
    verified (when the run knows it), the context, the task."""
    parts = [UNATTENDED]
    if verification is not None:
        parts.append(verification.render())
    if context.strip():
        parts.append("# Context\n\n" + context.strip() + "\n")
    parts.append(task_message(task))
    return "\n".join(parts)
