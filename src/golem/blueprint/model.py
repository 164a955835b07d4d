"""Blueprints: a graph of deterministic steps and agent loops, as data.

A blueprint is a list of nodes; each node does one thing and ends with an outcome
(``success`` or ``failure``; a gate ends ``approved`` or ``rejected``), and its ``next``
names the node to go to, for every outcome or per outcome. ``end`` ends the run. The same
model is loaded from YAML (``golem.blueprint.load_blueprint``) or built in Python.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from golem.agent.budget import Budget
from golem.context.toolshed.selection import parse_patterns
from golem.core.spec import BoxSpec

__all__ = [
    "END",
    "FOLLOW_UP_ACTIONS",
    "MAX_ATTEMPTS",
    "OUTCOMES",
    "AgentNode",
    "AgentSettings",
    "Blueprint",
    "BoxNode",
    "CINode",
    "GateNode",
    "HostAction",
    "HostNode",
    "LoopNode",
    "Node",
    "Outcome",
]

END = "end"
Outcome = Literal["success", "failure", "approved", "rejected"]
OUTCOMES: tuple[str, ...] = ("success", "failure", "approved", "rejected")
HostAction = Literal[
    "prepare",
    "hydrate",
    "install",
    "keep-prepared",
    "ship",
    "escalate",
    "checkout_pull_request",
    "read_review",
    "answer_review",
    "escalate_review",
]
FOLLOW_UP_ACTIONS: frozenset[str] = frozenset(
    {"checkout_pull_request", "read_review", "answer_review", "escalate_review"}
)
"""The host actions of a follow-up run (one with a pull request to follow up)."""
CHECKS = ("setup", "lint", "build", "test")
MAX_ATTEMPTS = 16
"""Attempts a blueprint or a request may name at most (a configuration bounds them lower)."""


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Unique name of the node, used by edges.")
    next: str | dict[Outcome, str] = Field(
        END, description="Node to go to next: one for every outcome, or one per outcome."
    )
    timeout: float | None = Field(None, gt=0, description="Seconds the node may take.")

    @field_validator("id")
    @classmethod
    def _simple_id(cls, value: str) -> str:
        if not value.replace("_", "").replace("-", "").isalnum() or value == END:
            raise ValueError(f"node id {value!r}: use letters, digits, - and _ (not 'end')")
        return value

    def successor(self, outcome: Outcome) -> str | None:
        """The node after this one ends with ``outcome``; None when no edge says."""
        if isinstance(self.next, str):
            return self.next
        return self.next.get(outcome)

    def targets(self) -> list[str]:
        """Every node this one may lead to."""
        return [self.next] if isinstance(self.next, str) else list(self.next.values())


class HostNode(_Node):
    """Deterministic work on the host: ``prepare`` (clone or fetch, branch), ``hydrate``
    (gather context), ``install`` (the repository's dependencies, made in an install box or
    taken from the cache, for the run's box), ``keep-prepared`` (the warm-up, then the
    box kept as the repository's prepared snapshot), ``ship`` (commit, push, open the PR),
    ``escalate`` (the same, marked for a human, with what still fails). A follow-up run's
    own: ``checkout_pull_request`` (the followed pull request's branch as it is on the
    remote), ``read_review`` (its whole review as the task), ``answer_review`` (commit and
    push on that branch, reply on the threads, ask the reviewers again),
    ``escalate_review`` (push what there is, hand the pull request to a person)."""

    kind: Literal["host"] = "host"
    action: HostAction


class BoxNode(_Node):
    """Deterministic commands in the run's box: the repository's own ``check`` (setup,
    lint, build, test), or explicit commands (succeeds when every command exits 0); or the
    ``baseline`` of a loop node: its checks on the tree before any change, which the loop
    compares its failures with (always succeeds: what fails there is information)."""

    kind: Literal["box"] = "box"
    check: Literal["setup", "lint", "build", "test"] | None = None
    run: list[str] = Field(default_factory=list, description="Shell commands, in order.")
    baseline: str | None = Field(
        None, description="A loop node's id: run its checks on the unchanged tree first."
    )
    fork: bool = Field(
        False,
        description="Run the commands in a fork of the run's box (a copy of its files), "
        "thrown away after: their output and results are recorded and choose the next "
        "node, and nothing they do reaches the run's box or checkout.",
    )

    @model_validator(mode="after")
    def _something_to_run(self) -> BoxNode:
        if [self.check is not None, bool(self.run), self.baseline is not None].count(True) != 1:
            raise ValueError(f"box node {self.id!r}: give one of check, run or baseline")
        if self.fork and self.baseline is not None:
            raise ValueError(f"box node {self.id!r}: a baseline runs in the run's box, not a fork")
        return self


class AgentSettings(BaseModel):
    """How an agent step works: its prompt, tools, model, budget, or an external CLI."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(description="Template: {{ task }}, {{ failures }}, {{ round }}, ...")
    tools: list[str] = Field(default_factory=lambda: ["all"], description="Tools/toolsets.")
    model: str | None = Field(None, description="provider/model; default: the run's.")
    budget: Budget = Field(default_factory=Budget)
    external: str | None = Field(
        None, description="Run an external CLI agent instead: claude, codex, pi, aider, goose."
    )
    toolshed: list[str] = Field(
        default_factory=list,
        description="Toolshed tools this step gets: <server>.<tool> names or globs "
        "(tracker.search, memory.*); default: none.",
    )

    @field_validator("toolshed")
    @classmethod
    def _toolshed_patterns(cls, value: list[str]) -> list[str]:
        parse_patterns(value)
        return value


class AgentNode(_Node, AgentSettings):
    """An agent loop in the run's box. Succeeds when the agent finishes.

    With ``attempts`` above 1 (or a run's request asking for them) the node makes that many
    attempts, each in a box of its own: the agent, then the loop node it leads to (its
    verification and fix rounds); the verified attempt with the most passing checks, then
    (with ``judge``) the model judge's choice, then the smallest diff, wins
    (golem.blueprint.steps.attempts)."""

    kind: Literal["agent"] = "agent"
    attempts: int = Field(
        1,
        ge=1,
        le=MAX_ATTEMPTS,
        description="Attempts at once (best-of-N), each verified by the loop node this one "
        "leads to; a run's request overrides it, within [engine] max_attempts.",
    )
    judge: bool | None = Field(
        None,
        description="Best-of-N: let one call of this node's model choose among verified "
        "attempts tied on their passing checks (before the smallest diff decides); "
        "default: [engine] judge_attempts.",
    )


class GateNode(_Node):
    """Waits for a person to approve or reject (``golem runs approve|reject``), at most
    ``timeout`` seconds; then ends with ``default``."""

    kind: Literal["gate"] = "gate"
    message: str = Field("Approve to continue.", description="What the person is asked.")
    timeout: float | None = Field(3600.0, gt=0)
    default: Literal["approved", "rejected"] = "rejected"


class LoopNode(_Node):
    """Verify, then fix and verify again until green or ``max_rounds`` fix rounds:
    ``success`` when the checks pass, ``failure`` when they still fail after the cap."""

    kind: Literal["loop"] = "loop"
    checks: list[str] = Field(
        default_factory=lambda: ["lint", "build", "test"],
        description="The repository's checks (lint, build, test) or shell commands.",
    )
    fix: AgentSettings
    max_rounds: int = Field(2, ge=0, le=20)
    when_unverified: Literal["draft", "escalate", "fail"] = Field(
        "draft",
        description="When no check verified the change (none found, or every one fails on "
        "the base commit too): ``draft`` ends with success and ship opens a draft PR labelled "
        "unverified; ``escalate`` ends with failure; ``fail`` fails the run.",
    )


class CINode(_Node):
    """After ship: wait for the forge's CI on the pushed commit; when it fails, a fix
    round (the failing jobs, their failed steps and log tails as context), verified with
    the ``verify`` loop's checks, pushed to the same branch as a new commit; at most
    ``ci_rounds``. ``success`` when CI passes (or there is none, as ``when_silent`` says);
    ``failure`` when it still fails after the cap, never finishes within ``wait``, or a
    required check is never created."""

    kind: Literal["ci"] = "ci"
    ci_rounds: int = Field(2, ge=0, le=10, description="CI fix rounds at most.")
    wait: float = Field(
        3600.0, gt=0, description="Seconds CI may take on one commit before golem stops waiting."
    )
    appear: float = Field(
        600.0,
        gt=0,
        description="Seconds for a first job (and every required check) to be created.",
    )
    poll: float = Field(30.0, gt=0, description="Seconds between two looks at the forge.")
    required: list[str] = Field(
        default_factory=list,
        description="Job names (or globs) that must pass; default: what the base branch "
        "requires on the forge, else every job reported.",
    )
    when_silent: Literal["pass", "escalate"] = Field(
        "pass",
        description="When no job at all is reported within ``appear`` (a repository without "
        "CI): ``pass`` ends with success, golem's own checks stand; ``escalate`` fails.",
    )
    verify: str | None = Field(
        None, description="A loop node whose checks run on a CI fix before it is pushed."
    )
    fix: AgentSettings


Node = Annotated[
    HostNode | BoxNode | AgentNode | GateNode | LoopNode | CINode, Field(discriminator="kind")
]
"""Any node of a blueprint."""


class Blueprint(BaseModel):
    """A named graph of nodes; the run starts at ``start`` (default: the first node)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    start: str | None = None
    budget: Budget = Field(
        default_factory=lambda: Budget(turns=None),
        description="For the whole run: every agent step draws on it.",
    )
    box: dict[str, object] = Field(
        default_factory=dict,
        description="BoxSpec fields for the run's box (memory, network, egress, image...), "
        "and secrets_env: host variables whose values the box gets as masked secrets.",
    )
    max_steps: int = Field(100, ge=1, description="Nodes a run may execute, cycles included.")
    nodes: list[Node] = Field(min_length=1)

    @field_validator("box")
    @classmethod
    def _box_fields(cls, box: dict[str, object]) -> dict[str, object]:
        if "secrets" in box:
            raise ValueError(
                "box.secrets would keep secret values in the blueprint (and in every run's "
                "state): name host environment variables in box.secrets_env instead"
            )
        managed = {"workspace", "workdir", "labels"} & box.keys()
        if managed:
            raise ValueError(f"box.{sorted(managed)[0]} is set by the run itself; leave it out")
        if "snapshot" in box:
            raise ValueError(
                "box.snapshot is not a blueprint setting: a run's boxes are the run's to make "
                "(from its repository's own snapshot, in a later golem); leave it out"
            )
        known = set(BoxSpec.model_fields) | {"secrets_env"}
        unknown = sorted(set(box) - known)
        if unknown:
            raise ValueError(f"box.{unknown[0]} is not a box setting (see BoxSpec)")
        names = box.get("secrets_env", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError("box.secrets_env is a list of environment variable names")
        return box

    @model_validator(mode="after")
    def _graph_is_sound(self) -> Blueprint:
        ids = [node.id for node in self.nodes]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"node ids must be unique: {', '.join(twice)}")
        known = {*ids, END}
        for node in self.nodes:
            for target in node.targets():
                if target not in known:
                    raise ValueError(f"node {node.id!r} leads to unknown node {target!r}")
        for node in self.nodes:
            baseline = node.baseline if isinstance(node, BoxNode) else None
            if baseline is not None and not isinstance(self._find(baseline), LoopNode):
                raise ValueError(f"node {node.id!r}: baseline {baseline!r} is not a loop node")
            verify = node.verify if isinstance(node, CINode) else None
            if verify is not None and not isinstance(self._find(verify), LoopNode):
                raise ValueError(f"node {node.id!r}: verify {verify!r} is not a loop node")
        if self.start is not None and self.start not in ids:
            raise ValueError(f"start {self.start!r} is not a node")
        unreachable = sorted(set(ids) - self._reachable())
        if unreachable:
            raise ValueError(f"nodes no edge reaches: {', '.join(map(repr, unreachable))}")
        return self

    def _reachable(self) -> set[str]:
        seen: set[str] = set()
        todo = [self.first]
        while todo:
            current = todo.pop()
            if current in seen or current == END:
                continue
            seen.add(current)
            todo.extend(self.node(current).targets())
        return seen

    @property
    def first(self) -> str:
        """The node a run starts at."""
        return self.start or self.nodes[0].id

    def node(self, node_id: str) -> Node:
        """A node by id."""
        found = self._find(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def _find(self, node_id: str) -> Node | None:
        return next((node for node in self.nodes if node.id == node_id), None)
