"""What a run reports: one discriminated union of events on golem's one event base,
persisted in the store in order, streamed to the CLI, over SSE and to the dashboard. An
agent step's events travel wrapped, with the node they belong to; a check's output arrives
as CheckOutput pieces before its CheckFinished."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from golem.agent.events import AgentEvent, OutputStream
from golem.checks import CheckResult
from golem.core.events import Event
from golem.core.isolation import Isolation
from golem.forge import PullRequest

__all__ = [
    "AgentStep",
    "BoxStarted",
    "CheckFinished",
    "CheckOutput",
    "GateDecided",
    "GateWaiting",
    "NodeFinished",
    "NodeStarted",
    "RunEvent",
    "RunFinished",
    "RunNote",
    "RunPaused",
    "RunStarted",
]


class _RunEvent(Event):
    """The field every event of a run adds."""

    run_id: str


class RunStarted(_RunEvent):
    """A run begins (or resumes)."""

    type: Literal["run_start"] = "run_start"
    blueprint: str
    resumed: bool = False


class NodeStarted(_RunEvent):
    """A node begins."""

    type: Literal["node_start"] = "node_start"
    node: str
    kind: str


class NodeFinished(_RunEvent):
    """A node ended with an outcome."""

    type: Literal["node_end"] = "node_end"
    node: str
    outcome: str
    detail: str = ""
    duration: float


class BoxStarted(_RunEvent):
    """A box of the run started (its own, or the install's), with what isolation it got."""

    type: Literal["box_start"] = "box_start"
    node: str | None = None
    box_id: str
    purpose: Literal["run", "install"] = "run"
    isolation: Isolation | None = Field(
        None, description="Its tier, backend and (a microVM's) accelerator, as its engine said."
    )


class CheckFinished(_RunEvent):
    """One of the repository's checks ran in the box."""

    type: Literal["check"] = "check"
    node: str
    round: int
    check: CheckResult


class CheckOutput(_RunEvent):
    """What a check printed, live, in order (masked; bounded: a ``golem`` piece at the end
    says how much was left out)."""

    type: Literal["check_output"] = "check_output"
    node: str
    round: int
    check: str = Field(description="The check's name (test, lint, ...; or its command).")
    command: str
    stream: OutputStream
    text: str


class GateWaiting(_RunEvent):
    """A gate asks a person."""

    type: Literal["gate_wait"] = "gate_wait"
    node: str
    message: str
    deadline: float | None


class GateDecided(_RunEvent):
    """A gate was approved or rejected, by a person or by its timeout."""

    type: Literal["gate_decision"] = "gate_decision"
    node: str
    decision: str
    decided_by: str


class RunPaused(_RunEvent):
    """The run's model provider stays down: the run waits, its work kept, and resumes by
    itself at ``resume_at`` (epoch seconds)."""

    type: Literal["run_paused"] = "run_paused"
    node: str
    reason: str
    resume_at: float


class RunNote(_RunEvent):
    """Something a person should know: the conventions chosen, the context gathered."""

    type: Literal["note"] = "note"
    node: str | None = None
    message: str


class AgentStep(_RunEvent):
    """An event of an agent step."""

    type: Literal["agent"] = "agent"
    node: str
    event: AgentEvent


class RunFinished(_RunEvent):
    """The run is over."""

    type: Literal["run_end"] = "run_end"
    status: str
    summary: str = ""
    pr: PullRequest | None = None
    cost_usd: float = 0.0
    duration: float = 0.0


RunEvent = Annotated[
    RunStarted
    | NodeStarted
    | NodeFinished
    | BoxStarted
    | CheckOutput
    | CheckFinished
    | GateWaiting
    | GateDecided
    | RunPaused
    | RunNote
    | AgentStep
    | RunFinished,
    Field(discriminator="type"),
]
"""Any event of a run."""
