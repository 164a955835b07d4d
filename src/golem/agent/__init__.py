"""golem.agent: model providers, coding tools that act in a box, the agent loop, budgets.

The loop runs on the host; only tool calls run in the box, so model keys never enter a box::

    model = make_model("anthropic/claude-opus-4-5", config.models)
    agent = Agent(model, make_tools("all"), budget=Budget(usd=2.0))
    outcome = await agent.run(box, "Fix the failing test", trajectory=Path("run.jsonl"))
"""

from golem.agent.budget import Budget, BudgetMeter
from golem.agent.contracts import (
    DeltaSink,
    LimitLedger,
    Model,
    Price,
    ProviderWait,
    Tool,
    ToolResult,
    WaitSink,
)
from golem.agent.events import (
    AgentEvent,
    AgentFinished,
    AgentOutcome,
    AgentStarted,
    ExternalOutput,
    ModelAnswered,
    ModelCalled,
    ModelDelta,
    ModelWaited,
    OutcomeStatus,
    OutputStream,
    ToolFinished,
    ToolStarted,
)
from golem.agent.external import ExternalAgent, ExternalTemplate
from golem.agent.loop import Agent, Resumed
from golem.agent.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)
from golem.agent.models import load_provider_early, make_model, price_for
from golem.agent.prompt import Verification, command_line
from golem.agent.tools import TOOLSETS, ReplyTool, make_tools
from golem.agent.trajectory import TrajectoryWriter, conversation_of, read_trajectory

__all__ = [
    "TOOLSETS",
    "Agent",
    "AgentEvent",
    "AgentFinished",
    "AgentOutcome",
    "AgentStarted",
    "Budget",
    "BudgetMeter",
    "DeltaSink",
    "ExternalAgent",
    "ExternalOutput",
    "ExternalTemplate",
    "LimitLedger",
    "Message",
    "Model",
    "ModelAnswered",
    "ModelCalled",
    "ModelDelta",
    "ModelRequest",
    "ModelResponse",
    "ModelWaited",
    "OutcomeStatus",
    "OutputStream",
    "Price",
    "ProviderWait",
    "ReplyTool",
    "Resumed",
    "StopReason",
    "Tool",
    "ToolCall",
    "ToolFinished",
    "ToolResult",
    "ToolSpec",
    "ToolStarted",
    "TrajectoryWriter",
    "Usage",
    "Verification",
    "WaitSink",
    "command_line",
    "conversation_of",
    "load_provider_early",
    "make_model",
    "make_tools",
    "price_for",
    "read_trajectory",
]
