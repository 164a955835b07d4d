"""ExternalAgent: a CLI coding agent (Claude Code, Codex, pi, aider, goose or any other)
run in its one-shot mode inside the box, with the same ``run`` as golem's own Agent.
What it prints reaches events and the trajectory masked by the box; each event and the
outcome are masked again after parsing (a JSON line can unescape a secret).

The CLI reaches its model only through the box's egress proxy, which swaps the sentinel
key in the box for the real one; golem refuses boxes where that is not so.
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
import time
from collections.abc import Sequence
from pathlib import Path

from golem.agent.budget import Budget
from golem.agent.events import (
    AgentEvent,
    AgentFinished,
    AgentOutcome,
    AgentStarted,
    ExternalOutput,
    OutcomeStatus,
)
from golem.agent.external.builtins import BUILTINS
from golem.agent.external.parsers import OutputParser, make_parser
from golem.agent.external.plan import Invocation, check_mcp, plan_call
from golem.agent.external.preflight import check_box, probe_box
from golem.agent.external.prompt import external_prompt
from golem.agent.external.stream import Ended, run_call
from golem.agent.external.template import ExternalTemplate
from golem.agent.models import cost_usd, price_for
from golem.agent.prompt import Verification
from golem.agent.trajectory import TrajectoryWriter
from golem.core.errors import ConfigError, GolemError
from golem.core.events import EventSink
from golem.core.masking import mask_fields
from golem.core.model_config import ModelsConfig
from golem.sandbox import Box

__all__ = ["RUN_ROOT", "ExternalAgent"]

RUN_ROOT = "/tmp/golem-external"
"""Where each run gets a fresh directory in the box (its prompt file, CLI config)."""


class ExternalAgent:
    """A CLI agent in the box: ``kind`` is ``claude``, ``codex``, ``pi``, ``aider``,
    ``goose``, or an ExternalTemplate for any other CLI."""

    def __init__(
        self,
        kind: str | ExternalTemplate,
        *,
        model: str | None = None,
        budget: Budget | None = None,
        on_event: EventSink[AgentEvent] | None = None,
        extra_args: Sequence[str] = (),
        timeout: float | None = None,
        models: ModelsConfig | None = None,
    ) -> None:
        if isinstance(kind, ExternalTemplate):
            self.template = kind
        elif kind in BUILTINS:
            self.template = BUILTINS[kind]
        else:
            raise ConfigError(
                f"no external agent {kind!r}; choose one of {', '.join(BUILTINS)}, or "
                "describe the CLI with an ExternalTemplate"
            )
        self.model = model
        self.budget = budget or Budget()
        self.extra_args = list(extra_args)
        self.timeout = timeout
        """The call's own time limit (None: the box's call timeout); the budget's wall
        clock shortens it."""
        self.models = models
        """Prices for usage a CLI reports without a cost ([models.prices])."""
        self._sinks: list[EventSink[AgentEvent]] = [on_event] if on_event else []

    @property
    def name(self) -> str:
        """The CLI and model, as events show them: ``claude`` or ``claude/<model>``."""
        return f"{self.template.name}/{self.model}" if self.model else self.template.name

    async def run(
        self,
        box: Box,
        task: str,
        *,
        context: str = "",
        trajectory: Path | None = None,
        verification: Verification | None = None,
        mcp_url: str | None = None,
        mcp_tools: Sequence[str] = (),
    ) -> AgentOutcome:
        """Run the CLI on ``task`` in ``box`` until it ends or its time is up. Raises
        ConfigError (or RuntimeNotAvailable) before anything runs when the box is not fit
        for it; the CLI's own failures end the run as ``error``. ``mcp_url``: the step's
        tools (``mcp_tools``, by name) as an MCP server the box reaches, given to the CLI
        through its template's ``mcp_*`` fields."""
        if mcp_url is not None:
            check_mcp(self.template)
        check_box(box, self.template)
        box_env = await probe_box(box, self.template)
        run_dir = f"{RUN_ROOT}/{secrets.token_hex(8)}"
        prompt = external_prompt(task, context, verification)
        call = plan_call(
            self.template,
            task=task,
            prompt=prompt,
            model=self.model,
            budget=self.budget,
            run_dir=run_dir,
            box_env=box_env,
            extra_args=self.extra_args,
            timeout=self.timeout or box.spec.timeout,
            mcp_url=mcp_url,
        )
        writer = TrajectoryWriter(trajectory) if trajectory is not None else None
        sinks = [*self._sinks, *([_writing(writer)] if writer else [])]

        def emit(event: AgentEvent) -> None:
            masked = mask_fields(event, box.mask)  # a CLI's JSON may unescape a secret
            for sink in sinks:
                sink(masked)

        started = time.monotonic()
        try:
            emit(
                AgentStarted(
                    task=task,
                    model=self.name,
                    tools=list(mcp_tools),
                    budget=self.budget,
                    system=prompt,
                )
            )
            emit(ExternalOutput(stream="golem", line="$ " + shlex.join(call.command)))
            parser = make_parser(self.template.output)
            ended = await self._run_call(box, call, parser, emit)
            outcome = self._outcome(call, parser, ended, time.monotonic() - started, trajectory)
            outcome = mask_fields(outcome, box.mask)
            emit(AgentFinished(outcome=outcome))
        finally:
            if writer is not None:
                writer.close()
            with contextlib.suppress(GolemError):
                await box.execute(["rm", "-rf", run_dir])
        return outcome

    async def _run_call(
        self, box: Box, call: Invocation, parser: OutputParser, emit: EventSink[AgentEvent]
    ) -> Ended:
        for path, content in call.files.items():
            try:
                await box.put_file(path, content, mode=0o600)
            except GolemError as exc:
                return Ended(failure=f"golem could not write {path} in the box: {exc.message}")
        return await run_call(box, call, parser, emit, lambda: self._limit(parser))

    def _outcome(
        self,
        call: Invocation,
        parser: OutputParser,
        ended: Ended,
        duration: float,
        trajectory: Path | None,
    ) -> AgentOutcome:
        status, summary, reason = _ending(self.template.name, call, parser, ended)
        cost = parser.cost_usd if parser.cost_usd is not None else self._priced(parser)
        if self.budget.usd is not None and cost > self.budget.usd and ended.stopped is None:
            reason += (
                f"; it spent ${cost:.4f}, more than the dollar budget of ${self.budget.usd:g} "
                "(an external CLI's spending is seen only after each of its model calls)"
            )
        return AgentOutcome(
            status=status,
            summary=summary or reason,
            reason=reason,
            usage=parser.usage,
            cost_usd=cost,
            turns=parser.turns,
            duration=duration,
            trajectory=trajectory,
        )

    def _limit(self, parser: OutputParser) -> str | None:
        """Why golem must stop the CLI now: a budget the CLI cannot hold itself is spent
        and its next step would be another model call."""
        if not parser.awaiting_model:
            return None
        budget, name = self.budget, self.template.name
        turns = budget.turns
        if turns is not None and not self.template.turns_args and parser.turns >= turns:
            return f"turn budget of {turns} model calls used; golem stopped {name}"
        if budget.usd is not None and not self.template.usd_args:
            spent = parser.cost_usd if parser.cost_usd is not None else self._priced(parser)
            if spent >= budget.usd:
                return (
                    f"dollar budget of ${budget.usd:g} spent (${spent:.4f}); golem stopped {name}"
                )
        return None

    def _priced(self, parser: OutputParser) -> float:
        """The cost of the usage the CLI reported, from golem's price table."""
        model = parser.model or self.model
        if self.template.provider is None or not model:
            return 0.0
        name = model if "/" in model else f"{self.template.provider}/{model}"
        return cost_usd(parser.usage, price_for(name, self.models))


def _ending(
    name: str, call: Invocation, parser: OutputParser, ended: Ended
) -> tuple[OutcomeStatus, str, str]:
    """(status, summary, reason) of a run from how the process ended and what it said."""
    last = parser.last_text
    if ended.stopped is not None:
        return "budget_spent", last, ended.stopped
    if ended.failure is not None:
        return "error", last, f"{name} could not run to its end: {ended.failure}"
    if ended.timed_out:
        if call.limited_by_budget:
            spent = f"wall-clock budget of {call.timeout:g}s spent; golem stopped {name}"
            return "budget_spent", last, spent
        return "error", last, f"the call's time limit of {call.timeout:g}s ended {name}"
    if parser.final is not None:
        status, summary, reason = parser.final.status, parser.final.summary, parser.final.reason
    elif ended.exit_code == 0:
        status, summary, reason = "done", last, f"{name} exited with code 0"
    else:
        tail = ended.stderr_tail.strip()[-500:] or "no error output"
        status, summary = "error", last
        reason = f"{name} exited with code {ended.exit_code}: {tail}"
    if ended.truncated:
        reason += (
            "; its output passed the box's output cap (max_output_bytes) and the rest was dropped"
        )
    return status, summary, reason


def _writing(writer: TrajectoryWriter) -> EventSink[AgentEvent]:
    """The trajectory as a sink of external events: one JSON line each, ExternalOutput
    included."""
    return writer
