"""Live progress of a run on a terminal, and its final report."""

from __future__ import annotations

import time

from rich.table import Table
from rich.text import Text

from golem.agent.events import AgentFinished, AgentStarted, ModelAnswered
from golem.blueprint.events import (
    AgentStep,
    CheckFinished,
    CheckOutput,
    GateDecided,
    GateWaiting,
    NodeFinished,
    NodeStarted,
    RunEvent,
    RunNote,
    RunPaused,
    RunStarted,
)
from golem.blueprint.show import attempt_line, check_outcome, ci_round_cells
from golem.blueprint.state import RunState
from golem.checks import CheckResult
from golem.cli.progress import AgentProgress, first_line
from golem.core.console import GolemConsole, markup, styled

__all__ = ["RunProgress", "print_report"]

SHOWN_FAILURES = 20


class RunProgress:
    """An event sink: a line per node, check and agent action, what the checks print as
    they run (dimmed, indented), and after each node a status line: node, fix round,
    tokens, cost, elapsed."""

    def __init__(self, console: GolemConsole) -> None:
        self.console = console
        self.agent = AgentProgress(console)
        self.started = time.monotonic()
        self.tokens = 0
        self.cost = 0.0
        self.round = 0
        self.partial: dict[str, str] = {}
        """The line a check's stream has begun but not ended, by stream."""

    def __call__(self, event: RunEvent) -> None:
        """Print one event."""
        if isinstance(event, AgentStep):
            self._agent(event)
        elif isinstance(event, RunStarted):
            again = " (resumed)" if event.resumed else ""
            self.console.print(
                markup("[bold]golem run[/] {} · {}{}", event.run_id, event.blueprint, again)
            )
        elif isinstance(event, NodeStarted):
            self.console.print(markup("[bold blue]▸ {}[/] [dim]({})[/]", event.node, event.kind))
        elif isinstance(event, CheckOutput):
            self._check_output(event)
        elif isinstance(event, CheckFinished):
            self._check(event)
        elif isinstance(event, NodeFinished):
            self._node_finished(event)
        elif isinstance(event, GateWaiting):
            self.console.print(
                markup(
                    "  [yellow]waiting for a person[/]: {} (golem runs approve|reject {})",
                    event.message,
                    event.run_id,
                )
            )
        elif isinstance(event, GateDecided):
            self.console.print(f"  gate {event.decision} by {event.decided_by}")
        elif isinstance(event, RunNote):
            self.console.print(markup("  [dim]· {}[/]", event.message))
        elif isinstance(event, RunPaused):
            resumes = time.strftime("%H:%M:%S", time.localtime(event.resume_at))
            self.console.print(
                markup(
                    "  [yellow]paused at {}, resumes by itself at {}[/]: {}",
                    event.node,
                    resumes,
                    event.reason,
                ),
                highlight=False,
            )

    def _agent(self, step: AgentStep) -> None:
        event = step.event
        if isinstance(event, AgentStarted | AgentFinished):
            return
        if isinstance(event, ModelAnswered):
            usage = event.response.usage
            self.tokens += (
                usage.input_tokens
                + usage.cache_read_tokens
                + usage.cache_write_tokens
                + usage.output_tokens
            )
            self.cost += event.response.cost_usd
        self.agent(event)

    def _check_output(self, event: CheckOutput) -> None:
        if event.stream == "golem":
            self.console.print(markup("    [yellow]{}[/]", event.text), highlight=False)
            return
        lines = (self.partial.pop(event.stream, "") + event.text).split("\n")
        if lines[-1]:
            self.partial[event.stream] = lines[-1]
        for line in lines[:-1]:
            self._output_line(line)

    def _output_line(self, line: str) -> None:
        self.console.print(markup("    [dim]│ {}[/]", line), highlight=False, soft_wrap=True)

    def _check(self, event: CheckFinished) -> None:
        for line in self.partial.values():
            self._output_line(line)
        self.partial.clear()
        check = event.check
        mark = Text("  ✓", style="green") if check.passed else Text("  ✗", style="red")
        self.round = event.round
        detail = "" if check.passed else f" {check_outcome(check)}: {first_line(check.output_tail)}"
        self.console.print(
            mark,
            markup("{} [dim]{}[/] {:.1f}s{}", check.name, check.command, check.duration, detail),
            highlight=False,
        )

    def _node_finished(self, event: NodeFinished) -> None:
        colour = "green" if event.outcome in ("success", "approved") else "red"
        elapsed = time.monotonic() - self.started
        self.console.print(
            styled(f"◂ {event.node} {event.outcome}", colour),
            markup(
                "[dim]{} · round {} · {:.1f}k tokens · ${:.4f} · {}:{:02d} elapsed[/]",
                event.detail,
                self.round,
                self.tokens / 1000,
                self.cost,
                int(elapsed) // 60,
                int(elapsed) % 60,
            ),
        )


def print_report(console: GolemConsole, state: RunState) -> None:
    """The run's outcome: PR, error, why it is not verified, diff stat, the box's
    preparation, the baseline, the checks and their failing tests, its attempts, rounds,
    cost, duration, trajectories."""
    colour = {"succeeded": "green", "unverified": "yellow", "escalated": "yellow"}.get(
        state.status, "red"
    )
    console.rule(styled(f"{state.status} · {state.id}", f"bold {colour}"))
    if state.pr is not None:
        kind = "draft PR (needs a human)" if state.pr.draft else "PR"
        labels = f"  [{', '.join(state.pr.labels)}]" if state.pr.labels else ""
        console.print(markup("{}: [bold]{}[/]  {}{}", kind, state.pr.url, state.pr.title, labels))
    if state.error:
        console.print(state.error, style="red")
    if state.unverified:
        console.print(markup("[yellow]not verified: {}[/]", state.unverified))
    if state.diff_stat:
        console.print(state.diff_stat.rstrip())
    _print_results(console, state)
    for attempt in state.attempts:  # a best-of-N run's, side by side
        console.print(f"attempt {attempt_line(attempt)}", highlight=False, soft_wrap=True)
    if state.ci:
        console.print(_ci_table(state))
    duration = (state.steps[-1].ended - state.steps[0].started) if state.steps else 0.0
    ci_rounds = f" · CI fix rounds: {state.ci_rounds}" if state.ci else ""
    console.print(
        f"fix rounds: {state.rounds}{ci_rounds} · cost: ${state.cost_usd:.4f} · "
        f"turns: {state.turns} · duration: {duration:.1f}s"
    )
    for path in state.trajectories:
        console.print(markup("[dim]trajectory: {}[/]", path))


def _print_results(console: GolemConsole, state: RunState) -> None:
    """The box's preparation, the baseline, the checks and the tests that fail."""
    if state.dependencies is not None or state.dependencies_cached:
        how = "reused" if state.dependencies_cached else "installed"
        key = f" {state.dependencies}" if state.dependencies else ""
        console.print(f"dependencies{key}: {how}", highlight=False)
    if state.prepared:
        console.print("prepared:")
        console.print(_table("STEP", state.prepared))
    if state.baseline:  # checks run on the base: only those that failed after the change
        outcomes = ", ".join(f"{c.name} {check_outcome(c)}" for c in state.baseline)
        console.print(f"baseline on {state.base or 'the base'}: {outcomes}")
    if state.checks:
        console.print(_table("CHECK", state.checks))
    failures = [(check.name, failure) for check in state.checks for failure in check.failures]
    for name, failure in failures[:SHOWN_FAILURES]:
        message = f"  {first_line(failure.message)}" if failure.message else ""
        console.print(markup("  [red]✗[/] {}: {}{}", name, failure.name, message), highlight=False)
    if len(failures) > SHOWN_FAILURES:
        console.print(f"  ... and {len(failures) - SHOWN_FAILURES} more failing tests")


def _ci_table(state: RunState) -> Table:
    """Each wait for the forge's CI: its commit, verdict, failing jobs, time, fix cost."""
    table = Table("CI ROUND", "COMMIT", "VERDICT", "FAILING", "TIME", "FIX COST", box=None)
    for ci in state.ci:
        cells = ci_round_cells(ci)
        colour = {"passed": "green", "no_ci": "yellow", "waiting": "dim"}.get(ci.verdict, "red")
        table.add_row(cells[0], cells[1], styled(cells[2], colour), *cells[3:])
    return table


def _table(heading: str, results: list[CheckResult]) -> Table:
    table = Table(heading, "COMMAND", "RESULT", "TIME", box=None)
    for result in results:
        outcome = check_outcome(result)
        colour = (
            "yellow" if result.flaky or result.preexisting else "green" if result.passed else "red"
        )
        table.add_row(
            result.name, result.command, styled(outcome, colour), f"{result.duration:.1f}s"
        )
    return table
