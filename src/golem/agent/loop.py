"""The agent loop: the model proposes tool calls, the box runs them, until the agent
finishes, a budget would be crossed, it repeats a failing action, or the model fails (an
agent that may pause stops ``paused`` when its provider stays down, and goes on later
from its conversation: ``run(..., resume=...)``).

The loop runs on the host; only tool calls reach the box, so model keys never enter one.
Everything it does is an event (``golem.agent.events``), written to the trajectory when a
path is given. The box's secrets are masked in one place for every tool: a tool call's
result is masked before the model, an event or the trajectory sees it, and every event and
the outcome are masked again (what the model says, too).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from golem.agent.budget import Budget, BudgetMeter
from golem.agent.contracts import Model, ProviderWait, Tool, ToolResult
from golem.agent.events import (
    AgentEvent,
    AgentFinished,
    AgentOutcome,
    AgentStarted,
    ModelAnswered,
    ModelCalled,
    ModelDelta,
    ModelWaited,
    OutcomeStatus,
    ToolFinished,
    ToolStarted,
)
from golem.agent.messages import Message, ModelRequest, ModelResponse, ToolCall
from golem.agent.prompt import NUDGE, Verification, system_prompt, task_message
from golem.agent.trajectory import TrajectoryWriter
from golem.core.errors import (
    BudgetSpent,
    ConfigError,
    ModelError,
    ModelRateLimited,
    ModelUnavailable,
)
from golem.core.events import EventSink
from golem.core.masking import mask_fields
from golem.sandbox import Box

__all__ = ["Agent", "Resumed"]

T = TypeVar("T")


@dataclass(frozen=True)
class _Stop:
    """Why a run ends."""

    status: OutcomeStatus
    reason: str
    summary: str = ""
    back_at: float | None = None


@dataclass(frozen=True)
class Resumed:
    """A paused agent's conversation so far (``golem.agent.trajectory.conversation_of``),
    to go on from: its messages, and how many model calls it made."""

    messages: list[Message]
    turns: int = 0


class Agent:
    """One agent: a model, the tools it may call, and the limits it works within."""

    def __init__(
        self,
        model: Model,
        tools: Sequence[Tool],
        *,
        budget: Budget | None = None,
        max_tokens: int = 8192,
        stuck_after: int = 3,
        on_event: EventSink[AgentEvent] | None = None,
        clock: Callable[[], float] = time.monotonic,
        pause_when_down: bool = False,
    ) -> None:
        """``pause_when_down``: a provider that stays down (its calls gave up on a passing
        failure) ends the run ``paused`` rather than ``error``."""
        self.model = model
        self.pause_when_down = pause_when_down
        self.tools = {tool.spec.name: tool for tool in tools}
        self.budget = budget or Budget()
        self.max_tokens = max_tokens
        self.stuck_after = stuck_after
        self._sinks: list[EventSink[AgentEvent]] = [on_event] if on_event else []
        self._clock = clock
        if self.budget.usd is not None and model.price is None:
            raise ConfigError(
                f"model {model.name} has no price, so a dollar budget cannot be held; add "
                f"its price under [models.prices] in golem.toml, or drop the dollar budget"
            )

    async def run(
        self,
        box: Box,
        task: str,
        *,
        context: str = "",
        trajectory: Path | None = None,
        verification: Verification | None = None,
        resume: Resumed | None = None,
    ) -> AgentOutcome:
        """Work on ``task`` in ``box`` until the run ends; never raises for the model's or
        the tools' failures (they end the run as ``error`` or become observations).
        ``verification``: the commands that will verify the work, for the system prompt;
        ``resume``: the conversation of a paused run of this task, to go on from (its
        spending is not counted again: the budget is what is left for the rest)."""
        writer = TrajectoryWriter(trajectory) if trajectory is not None else None
        sinks = list(self._sinks)
        if writer is not None:
            sinks.append(writer)
        run = _Run(box, BudgetMeter(self.budget, self.model.price, self._clock), sinks)
        run.turns_before = resume.turns if resume is not None else 0
        system = system_prompt(box.spec.workdir, context, verification)
        try:
            run.emit(
                AgentStarted(
                    task=task,
                    model=self.model.name,
                    tools=list(self.tools),
                    budget=self.budget,
                    system=system,
                    resumed=resume is not None,
                )
            )
            stop = await self._work(run, system, task, resume)
            meter = run.meter
            outcome = AgentOutcome(
                status=stop.status,
                summary=stop.summary or stop.reason,
                reason=stop.reason,
                usage=meter.usage,
                cost_usd=meter.cost_usd,
                turns=meter.turns,
                duration=meter.elapsed,
                trajectory=trajectory,
                back_at=stop.back_at,
            )
            outcome = mask_fields(outcome, box.mask)
            run.emit(AgentFinished(outcome=outcome))
        finally:  # cancelled too: the trajectory keeps what happened so far
            if writer is not None:
                writer.close()
        return outcome

    async def _work(self, run: _Run, system: str, task: str, resume: Resumed | None) -> _Stop:
        if resume is not None:
            talk = _Conversation(system, list(resume.messages), recorded=len(resume.messages))
        else:
            talk = _Conversation(system, [Message(role="user", content=task_message(task))])
        try:
            while (stop := await self._turn(run, talk)) is None:
                pass
        except BudgetSpent as exc:
            return _Stop("budget_spent", exc.reason, talk.last_text())
        except (ModelUnavailable, ModelRateLimited) as exc:
            if not self.pause_when_down:
                return _Stop("error", f"the model failed: {exc.message}", talk.last_text())
            why = f"the model provider stays down: {exc.message}"
            return _Stop("paused", why, talk.last_text(), exc.back_at)
        except ModelError as exc:
            return _Stop("error", f"the model failed: {exc.message}", talk.last_text())
        return stop

    async def _turn(self, run: _Run, talk: _Conversation) -> _Stop | None:
        """One model call and the tool calls it asks for; a _Stop when the run ends."""
        specs = [tool.spec for tool in self.tools.values()]
        request = run.meter.admit(
            ModelRequest(
                system=talk.system, messages=talk.messages, tools=specs, max_tokens=self.max_tokens
            )
        )
        run.emit(
            ModelCalled(
                turn=run.turn,
                new_messages=talk.messages[talk.recorded :],
                max_tokens=request.max_tokens,
            )
        )
        response = await self._call(run, request)
        talk.messages.append(response.message)
        talk.recorded = len(talk.messages)
        if response.stop_reason == "refusal":
            return _Stop("error", f"the model refused: {response.message.content}")
        if not response.message.tool_calls:
            if talk.nudged:
                return _Stop("done", "the model ended without a tool call", talk.last_text())
            talk.nudged = True
            talk.messages.append(Message(role="user", content=NUDGE))
            return None
        talk.nudged = False
        for call in response.message.tool_calls:
            result = await self._run_tool(run, call)
            talk.messages.append(
                Message(
                    role="tool",
                    content=result.output,
                    tool_call_id=call.id,
                    is_error=result.is_error,
                )
            )
            if result.finished:
                return _Stop("done", "the agent called finish", result.output)
            if stuck := self._stuck(talk.recent, call, result):
                return stuck
        return None

    async def _call(self, run: _Run, request: ModelRequest) -> ModelResponse:
        turn = run.turn

        def delta(text: str) -> None:
            run.emit(ModelDelta(turn=turn, text=text))

        def waited(wait: ProviderWait) -> None:
            run.emit(
                ModelWaited(turn=turn, seconds=wait.seconds, reason=wait.reason, header=wait.header)
            )

        response = await _bounded(self.model.complete(request, delta, waited), run.meter)
        run.meter.charge(request, response)
        run.emit(ModelAnswered(turn=turn, response=response, cost_so_far=run.meter.cost_usd))
        return response

    async def _run_tool(self, run: _Run, call: ToolCall) -> ToolResult:
        """Run one call; every failure is an observation the model can read. The result,
        whatever made it, has the box's secrets masked."""
        run.emit(ToolStarted(call=call))
        started = time.monotonic()
        tool = self.tools.get(call.name)
        if call.error is not None:
            result = ToolResult(f"the arguments were not valid JSON: {call.error}", True)
        elif tool is None:
            names = ", ".join(self.tools)
            result = ToolResult(f"there is no tool {call.name!r}; the tools are: {names}", True)
        else:
            try:
                result = await _bounded(tool.run(run.box, call.arguments), run.meter)
            except BudgetSpent:
                raise
            except Exception as exc:  # a tool's crash is the model's observation
                result = ToolResult(f"the tool failed: {type(exc).__name__}: {exc}", True)
        result = replace(result, output=run.box.mask(result.output))
        run.emit(
            ToolFinished(
                call_id=call.id,
                name=call.name,
                output=result.output,
                is_error=result.is_error,
                duration=time.monotonic() - started,
            )
        )
        return result

    def _stuck(
        self, recent: list[tuple[str, bool]], call: ToolCall, result: ToolResult
    ) -> _Stop | None:
        """A stop for a run that keeps making the same failing call."""
        key = call.name + json.dumps(call.arguments, sort_keys=True, default=str)
        recent.append((key, result.is_error))
        last = recent[-self.stuck_after :]
        if len(last) == self.stuck_after and all(err and k == key for k, err in last):
            return _Stop(
                "stuck",
                f"the same failing {call.name} call was made {self.stuck_after} times in a row",
                f"stuck repeating {call.name} {json.dumps(call.arguments)[:200]}: "
                f"{result.output[-500:]}",
            )
        return None


async def _bounded(work: Awaitable[T], meter: BudgetMeter) -> T:
    """Await ``work`` within the wall-clock budget that is left."""
    meter.check_time()
    try:
        async with asyncio.timeout(meter.remaining_seconds()):
            return await work
    except TimeoutError:
        meter.check_time()  # BudgetSpent when the budget is what ran out
        raise


@dataclass
class _Run:
    """One run of an agent: its box, its budget meter, and where its events go (each
    masked with the box's secrets first)."""

    box: Box
    meter: BudgetMeter
    sinks: list[EventSink[AgentEvent]]
    turns_before: int = 0
    """Model calls of the conversation before it was resumed (turns count on from them)."""

    @property
    def turn(self) -> int:
        """The number of the next model call."""
        return self.turns_before + self.meter.turns + 1

    def emit(self, event: AgentEvent) -> None:
        """Send ``event``, masked, to every sink."""
        masked = mask_fields(event, self.box.mask)
        for sink in self.sinks:
            sink(masked)


@dataclass
class _Conversation:
    """What a run has said so far."""

    system: str
    messages: list[Message]
    recorded: int = 0  # messages already in the trajectory
    recent: list[tuple[str, bool]] = field(default_factory=list)  # (call, failed)
    nudged: bool = False

    def last_text(self) -> str:
        """The last thing the assistant said, for a run that ended without finish."""
        for message in reversed(self.messages):
            if message.role == "assistant" and message.content.strip():
                return message.content.strip()
        return ""
