"""golem.blueprint: graphs of deterministic steps and agent loops, loaded from YAML, run
to a pull request with state saved after every node."""

from typing import TYPE_CHECKING

from golem.blueprint.book import RunBook, parse_run_event
from golem.blueprint.events import CheckOutput, RunEvent
from golem.blueprint.lifecycle import fail_unstarted, orphaned, requeue_run
from golem.blueprint.loader import BUILTINS, load_blueprint, parse_blueprint
from golem.blueprint.model import (
    AgentNode,
    AgentSettings,
    Blueprint,
    BoxNode,
    GateNode,
    HostNode,
    LoopNode,
    Node,
)
from golem.blueprint.show import draw
from golem.blueprint.state import NodeRecord, RunRequest, RunState, RunStatus

if TYPE_CHECKING:
    from golem.blueprint.runner import Runner

__all__ = [
    "BUILTINS",
    "AgentNode",
    "AgentSettings",
    "Blueprint",
    "BoxNode",
    "CheckOutput",
    "GateNode",
    "HostNode",
    "LoopNode",
    "Node",
    "NodeRecord",
    "RunBook",
    "RunEvent",
    "RunRequest",
    "RunState",
    "RunStatus",
    "Runner",
    "draw",
    "fail_unstarted",
    "load_blueprint",
    "orphaned",
    "parse_blueprint",
    "parse_run_event",
    "requeue_run",
]


def __getattr__(name: str) -> object:
    """The Runner, imported when first asked for: it brings the context, forge, agent and
    sandbox layers with it, which loading or checking a blueprint does not need."""
    if name == "Runner":
        from golem.blueprint.runner import Runner  # noqa: PLC0415

        return Runner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
