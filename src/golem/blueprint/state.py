"""A run's request and its persisted state: enough to show it, resume it or clean it up."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from golem.agent.messages import Usage
from golem.blueprint.model import MAX_ATTEMPTS
from golem.checks import CheckResult, RepoConventions
from golem.core.isolation import Isolation, IsolationTier
from golem.core.network import RemotePolicy
from golem.forge import Issue, PullRequest

__all__ = [
    "FINAL",
    "AttemptRecord",
    "CIRound",
    "DroppedCheck",
    "FollowUp",
    "GateState",
    "NodeRecord",
    "Pause",
    "PausedStep",
    "PreparedStart",
    "RunRequest",
    "RunState",
    "RunStatus",
    "ThreadReply",
]

RunStatus = Literal[
    "queued", "running", "waiting", "succeeded", "unverified", "escalated", "failed", "cancelled"
]
"""``waiting``: at a gate, or paused (its model provider down: ``RunState.pause`` says why
and when it resumes); ``succeeded``: a PR opened whose checks passed; ``unverified``: a
draft PR opened although no check verified it (``unverified`` says why); ``escalated``: a PR
or branch marked for a human; ``failed``: it could not go on (the reason is in ``error``)."""
FINAL: frozenset[str] = frozenset({"succeeded", "unverified", "escalated", "failed", "cancelled"})


class DroppedCheck(BaseModel):
    """A check that could not be prepared: not run, with why and what makes it run."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="lint, build or test.")
    command: str
    preparation: str = Field(description="The install command that failed.")
    reason: str = Field(description="What failed preparing it, and how to make it run.")


class FollowUp(BaseModel):
    """A run that answers reviewers on a pull request golem opened: it works on that pull
    request's branch and pushes new commits to it."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(description="owner/name (GitHub) or group/project (GitLab) of the PR.")
    number: int = Field(description="The pull (merge) request's number (GitLab: its iid).")
    parent_run: str | None = Field(None, description="The run that opened it, when known.")
    requested_by: str = Field("", description="Who asked (a login).")
    thread: str | None = Field(
        None, description="The review thread the request came from (ReviewThread.id)."
    )
    request: str = Field("", description="What they wrote, as they wrote it.")


class RunRequest(BaseModel):
    """What ``golem run`` (or the API) asks for."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(description="A git URL or a local repository path.")
    task: str | None = Field(None, description="What to do, in words.")
    issue: str | None = Field(None, description="An issue URL, owner/name#N, or a file.")
    blueprint: str = Field("minion", description="A built-in blueprint or a YAML file.")
    model: str | None = Field(None, description="provider/model; default: [models] default.")
    forge: Literal["github", "gitlab", "local"] | None = Field(
        None, description="Where the PR goes; default: [forge] provider."
    )
    budget_usd: float | None = Field(None, gt=0, description="Dollars for the whole run.")
    base: str | None = Field(None, description="Base branch; default: the remote's default.")
    follow_up: FollowUp | None = Field(
        None,
        description="Answer the reviews of this pull request, on its branch (the blueprint "
        "is then follow-up unless one is named).",
    )
    tier: IsolationTier | None = Field(
        None,
        description="The isolation tier of the run's boxes (container, gvisor, microvm): "
        "at least what the server's trust policy gives it (a weaker one is refused); "
        "default: that least tier, or the default backend's.",
    )
    attempts: int | None = Field(
        None,
        ge=1,
        le=MAX_ATTEMPTS,
        description="Attempts of the blueprint's agent node, each verified in a box of its "
        "own; the best verified one ships (best-of-N). Default: the node's own (1); at most "
        "[engine] max_attempts.",
    )
    goal_check: str | None = Field(
        None,
        min_length=1,
        max_length=4000,
        description="A goal loop's goal, as a shell command that exits 0 once it holds "
        "(pytest -q): run in the run's box as the check named goal after the loops' own "
        "checks, held against the change (never set aside as failing on the base commit).",
    )

    @model_validator(mode="after")
    def _follow_up_blueprint(self) -> RunRequest:
        if self.follow_up is not None and "blueprint" not in self.model_fields_set:
            self.blueprint = "follow-up"
        return self


class PreparedStart(BaseModel):
    """The prepared snapshot a run's box started from (docs/snapshots.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The snapshot's name (prepared-...).")
    digest: str = Field(description="The sha256 of its archive.")
    commit: str = Field(description="The commit it was prepared at.")
    setup_skipped: bool = Field(
        False, description="Whether the run's setup was skipped (nothing it depends on changed)."
    )

    def describe(self) -> str:
        """One line: the snapshot's name, digest and commit."""
        return f"{self.name} (sha256:{self.digest[:12]}, commit {self.commit[:12]})"


class AttemptRecord(BaseModel):
    """One attempt of a best-of-N agent node: its own box, checkout, trajectory and cost,
    verified by the loop node after it; whether it won, and why not."""

    model_config = ConfigDict(extra="forbid")

    number: int = Field(description="From 1; the lowest wins a tie.")
    status: Literal["running", "verified", "unverified", "stopped", "failed", "won", "lost"] = (
        "running"
    )
    verdict: str = Field("", description="Why it won, lost, stopped or failed.")
    judged: str = Field(
        "",
        description="The model judge's reason for choosing it (its words, one line), when "
        "a judge chose among attempts tied on their checks.",
    )
    prepared: str = Field("", description="How its box was brought to the run's prepared point.")
    checks: list[CheckResult] = Field(default_factory=list)
    rounds: int = Field(0, description="Its fix rounds.")
    cost_usd: float = 0.0
    turns: int = 0
    diff_lines: int | None = Field(None, description="Lines added and deleted by its change.")
    diff_stat: str = ""
    summary: str = ""
    trajectories: list[str] = Field(default_factory=list)
    workspace: str = Field("", description="Its host checkout.")

    @property
    def passing(self) -> int:
        """Its checks that passed (a flaky one passed when run again)."""
        return sum(1 for check in self.checks if check.passed)


class NodeRecord(BaseModel):
    """One node that ran."""

    model_config = ConfigDict(extra="forbid")

    node: str
    kind: str
    outcome: str
    started: float
    ended: float
    detail: str = ""
    cost_usd: float = Field(0.0, description="What its agent steps cost.")
    paused: float = Field(
        0.0,
        description="Seconds the node was paused (its provider down) between ``started`` and "
        "``ended``: not counted against wall-clock budgets.",
    )


class CIRound(BaseModel):
    """One wait for the forge's CI on a pushed commit, and the fix that followed it."""

    model_config = ConfigDict(extra="forbid")

    round: int = Field(description="0: the commit ship pushed; N: after the Nth CI fix.")
    commit: str
    started: float
    ended: float | None = None
    verdict: Literal["waiting", "passed", "failed", "no_ci", "timed_out", "missing"] = Field(
        "waiting",
        description="``no_ci``: nothing reported (or a forge without CI); ``timed_out``: "
        "still running at the wait's end; ``missing``: a required check never created.",
    )
    failing: list[str] = Field(default_factory=list, description="The jobs that failed.")
    note: str = ""
    cost_usd: float = Field(0.0, description="What the fix after it cost.")


class ThreadReply(BaseModel):
    """A reply the agent of a follow-up run wrote for a review thread (posted at ship)."""

    model_config = ConfigDict(extra="forbid")

    thread: str | None = Field(description="ReviewThread.id; None: the PR's conversation.")
    body: str
    posted: bool = False


class GateState(BaseModel):
    """A gate waiting for a person, and what was decided."""

    model_config = ConfigDict(extra="forbid")

    node: str
    message: str
    asked: float
    deadline: float | None
    decision: Literal["approved", "rejected"] | None = None
    decided_by: Literal["person", "timeout"] | None = None


class PausedStep(BaseModel):
    """What a paused agent step had done: it goes on from its conversation (the run's
    events), with what is left of its own budget."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The step: its node's id (a loop's fix: the loop's).")
    trajectory: str
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    seconds: float = Field(0.0, description="Seconds it worked (pauses apart).")


class Pause(BaseModel):
    """A run paused because its model provider stays down: where, why, and when it
    resumes by itself."""

    model_config = ConfigDict(extra="forbid")

    node: str
    reason: str
    since: float
    resume_at: float
    count: int = Field(1, description="Pauses in a row of this node (the wait doubles).")
    node_started: float = Field(description="When the node first started.")
    paused_before: float = Field(0.0, description="Seconds the node was paused before this.")
    cost_usd: float = Field(0.0, description="What the node's agent steps cost before it.")
    step: PausedStep | None = None


class RunState(BaseModel):
    """Everything about a run, saved after every node."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: RunStatus = "queued"
    request: RunRequest
    blueprint: str = Field(description="The blueprint's name.")
    blueprint_source: str = Field(description="Its YAML, so a resumed run runs the same one.")
    created: float = Field(default_factory=time.time)
    updated: float = Field(default_factory=time.time)
    owner_pid: int | None = None
    owner_start: int | None = None
    owner_server: str | None = Field(None, description="host:pid of the server running it.")
    claim: int = Field(
        0,
        description="How often a server claimed the run or queued it again: a runner writes "
        "the run only while its claim is the one it read (the store refuses a stale runner).",
    )
    remote_policy: RemotePolicy | None = Field(
        None,
        description="The git remotes the run may reach (a server role's repos policy); "
        "None: any the host can.",
    )
    tier: IsolationTier | None = Field(
        None,
        description="The isolation tier of its boxes: what it asked, raised to the least "
        "its source may run in (the server's trust policy); None: the default backend's. "
        "On a Ray cluster its runner and boxes run on that tier's nodes only.",
    )
    containers: bool = Field(
        False,
        description="May its box get a private container engine when its checks need one "
        "(a microVM box with containers, docs/blueprints.md): a local run may; a served one "
        "as the submitting key's role's server.policies.<role>.containers says.",
    )
    isolation: Isolation | None = Field(
        None, description="What isolation its box got (tier, backend, a microVM's accelerator)."
    )
    current: str | None = Field(None, description="The node to run next (or running).")
    steps: list[NodeRecord] = Field(default_factory=list)
    workspace: str = Field("", description="The host checkout the run works on.")
    branch: str = ""
    base: str = ""
    title: str = Field("", description="The task's first line, or the issue's title.")
    issue: Issue | None = None
    task_text: str = Field("", description="The whole task, issue included.")
    conventions: RepoConventions | None = None
    context: str = Field("", description="The hydrated context the agent steps get.")
    context_tokens: int = 0
    prepared: list[CheckResult] = Field(
        default_factory=list, description="The install and setup commands' results."
    )
    dropped: list[DroppedCheck] = Field(
        default_factory=list,
        description="Checks whose preparation failed (an install that serves them alone): "
        "not run, each with why; the run goes on with the others.",
    )
    dependencies: str | None = Field(
        None, description="The install's cache key (dependencies made or reused)."
    )
    dependencies_cached: bool = Field(False, description="Whether the install was skipped.")
    started_from: PreparedStart | None = Field(
        None,
        description="The prepared snapshot its box started from; None: an empty box.",
    )
    baseline: list[CheckResult] | None = Field(
        None, description="The verifying checks on the base commit, before any change."
    )
    base_tree: str | None = Field(
        None,
        description="The box's working tree before any change, as a git tree id: what a "
        "check that fails is run on again (the baseline), when it did not run there yet.",
    )
    checks: list[CheckResult] = Field(default_factory=list)
    unverified: str | None = Field(
        None, description="Why no check verified the change (None: verified, or not yet)."
    )
    verified: bool = Field(
        False,
        description="Whether a verify loop concluded that the change passes the checks; a "
        "change ships as verified only then.",
    )
    rounds: int = Field(0, description="Fix rounds used.")
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    turns: int = 0
    summary: str = Field("", description="What the agent says it did.")
    commit: str | None = None
    diff_stat: str = ""
    pr: PullRequest | None = None
    ci: list[CIRound] = Field(
        default_factory=list, description="Each wait for the forge's CI, in order."
    )
    ci_rounds: int = Field(0, description="CI fix rounds used.")
    replies: list[ThreadReply] = Field(
        default_factory=list, description="A follow-up's replies to review threads."
    )
    gate: GateState | None = None
    pause: Pause | None = Field(
        None, description="Paused: its model provider stays down; resumes at resume_at."
    )
    trajectories: list[str] = Field(default_factory=list)
    attempts: list[AttemptRecord] = Field(
        default_factory=list, description="A best-of-N agent node's attempts, in order."
    )
    attempts_concluded: tuple[str, Literal["success", "failure"]] | None = Field(
        None,
        description="The loop node the attempts already ran, and its outcome (the chosen "
        "attempt's): that node ends so at once, its verification done.",
    )
    error: str | None = None
    resumable: bool = Field(
        False,
        description="It failed for its forge credentials, its work kept: `golem runs "
        "resume` goes on from its current node once they are fixed.",
    )
    cancel_requested: bool = False

    @property
    def finished(self) -> bool:
        """Whether the run is over."""
        return self.status in FINAL
