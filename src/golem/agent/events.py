"""What an agent run reports: typed events, one discriminated union, and the outcome.

The same events drive live display, are written to the trajectory (JSONL, one event per
line; text deltas excepted), and can be replayed: ``scripted:run.jsonl`` answers with the
``model_response`` events of a recorded run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from golem.agent.budget import Budget
from golem.agent.messages import Message, ModelResponse, ToolCall, Usage
from golem.core.events import Event

__all__ = [
    "AgentEvent",
    "AgentFinished",
    "AgentOutcome",
    "AgentStarted",
    "ExternalOutput",
    "ModelAnswered",
    "ModelCalled",
    "ModelDelta",
    "ModelWaited",
    "OutcomeStatus",
    "OutputStream",
    "ToolFinished",
    "ToolStarted",
]

OutcomeStatus = Annotated[
    Literal["done", "budget_spent", "stuck", "error", "paused"],
    # Trajectories and stored events written before the one name read "budget_exhausted".
    BeforeValidator(lambda status: "budget_spent" if status == "budget_exhausted" else status),
]


class AgentOutcome(BaseModel):
    """How a run ended: ``done`` (the agent called finish), ``budget_spent``,
    ``stuck`` (it repeated a failing action), ``error`` (the model failed or refused) or
    ``paused`` (its provider stays down: an agent that may pause stops there, and can go
    on later from its conversation)."""

    model_config = ConfigDict(extra="forbid")

    status: OutcomeStatus
    summary: str = Field(description="The agent's own summary, or what stopped it.")
    reason: str = Field(description="Why the run ended, for a person.")
    usage: Usage
    cost_usd: float
    turns: int
    duration: float
    trajectory: Path | None = None
    back_at: float | None = Field(
        None, description="Paused: when the provider said it expects to be back, if it said."
    )


class AgentStarted(Event):
    """A run begins (or, ``resumed``, goes on from its conversation so far): its task,
    model, tools, budget and system prompt."""

    type: Literal["agent_start"] = "agent_start"
    task: str
    model: str
    tools: list[str]
    budget: Budget
    system: str
    resumed: bool = False


class ModelCalled(Event):
    """A model call goes out: the messages added since the last call, and its cap."""

    type: Literal["model_request"] = "model_request"
    turn: int
    new_messages: list[Message]
    max_tokens: int


class ModelDelta(Event):
    """Text of the reply as it streams in (live display only; not in the trajectory)."""

    type: Literal["model_delta"] = "model_delta"
    turn: int
    text: str


class ModelAnswered(Event):
    """The model's reply, with usage and the run's cost so far."""

    type: Literal["model_response"] = "model_response"
    turn: int
    response: ModelResponse
    cost_so_far: float


class ModelWaited(Event):
    """A model call waited before it went out: how long, why, and which of the provider's
    headers said so (None: golem's back-off, or another call's answer awaited)."""

    type: Literal["model_wait"] = "model_wait"
    turn: int
    seconds: float
    reason: str
    header: str | None = None


class ToolStarted(Event):
    """A tool call is about to run in the box."""

    type: Literal["tool_call"] = "tool_call"
    call: ToolCall


class ToolFinished(Event):
    """A tool call's observation, as the model will read it."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str
    is_error: bool
    duration: float


OutputStream = Literal["stdout", "stderr", "golem"]
"""Where an external agent's line came from: its standard output or error, or golem itself
(the command it ran, egress refusals, why it stopped the CLI)."""


class ExternalOutput(Event):
    """One line an external CLI agent printed, as it arrived (secrets masked by the box)."""

    type: Literal["external_output"] = "external_output"
    stream: OutputStream
    line: str


class AgentFinished(Event):
    """The run's outcome."""

    type: Literal["agent_outcome"] = "agent_outcome"
    outcome: AgentOutcome


AgentEvent = Annotated[
    AgentStarted
    | ModelCalled
    | ModelDelta
    | ModelWaited
    | ModelAnswered
    | ToolStarted
    | ToolFinished
    | ExternalOutput
    | AgentFinished,
    Field(discriminator="type"),
]
"""Any event of an agent run (the built-in loop's, or an external CLI agent's)."""
