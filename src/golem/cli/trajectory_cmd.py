"""`golem trajectory show FILE`: a recorded agent run, rendered for a person."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.panel import Panel

from golem.core.console import GolemConsole, markup, styled, terminal

if TYPE_CHECKING:
    from golem.agent.events import AgentEvent

__all__ = ["trajectory_app"]

trajectory_app = typer.Typer(
    rich_markup_mode=None, help="Read recorded agent runs.", no_args_is_help=True
)


@trajectory_app.command("show")
def show_command(
    path: Path = typer.Argument(..., help="A trajectory file (.jsonl)."),
    full: bool = typer.Option(False, "--full", help="Whole tool outputs and messages."),
) -> None:
    """Render a trajectory: the task, each turn's words and tool calls, the outcome."""
    from golem.agent.trajectory import read_trajectory

    events, notes = read_trajectory(path)
    console = terminal(highlight=False)
    limit = None if full else 12
    for event in events:
        _render(console, event, limit)
    for note in notes:
        console.print(note, style="dim")


def _clip(text: str, limit: int | None) -> str:
    lines = text.rstrip().splitlines()
    if limit is None or len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join(lines[:limit]) + f"\n… {len(lines) - limit} more lines (--full shows all)"


def _render(console: GolemConsole, event: AgentEvent, limit: int | None) -> None:
    from golem.agent.events import (
        AgentFinished,
        AgentStarted,
        ExternalOutput,
        ModelAnswered,
        ModelCalled,
        ToolFinished,
        ToolStarted,
    )
    from golem.cli.progress import describe_call

    if isinstance(event, AgentStarted):
        budget = ", ".join(
            f"{k}={v}" for k, v in event.budget.model_dump().items() if v is not None
        )
        console.print(Panel(event.task.strip(), title=styled(f"task · {event.model}", "")))
        console.print(markup("[dim]tools: {} · budget: {}[/]", ", ".join(event.tools), budget))
    elif isinstance(event, ModelCalled):
        console.rule(f"turn {event.turn}", style="dim")
    elif isinstance(event, ModelAnswered):
        message = event.response.message
        if message.content.strip():
            console.print(_clip(message.content, limit), style="cyan")
        usage = event.response.usage
        console.print(
            markup(
                "[dim]{} in / {} out · ${:.4f} so far · {}[/]",
                usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
                usage.output_tokens,
                event.cost_so_far,
                event.response.stop_reason,
            )
        )
    elif isinstance(event, ToolStarted):
        call = describe_call(event.call.name, event.call.arguments)
        console.print(f"→ {call}", style="bold")
    elif isinstance(event, ToolFinished):
        style = "red" if event.is_error else "green"
        console.print(Panel(_clip(event.output, limit) or "(no output)", border_style=style))
    elif isinstance(event, ExternalOutput):
        console.print(f"{event.stream}: {event.line}", style="dim")
    elif isinstance(event, AgentFinished):
        outcome = event.outcome
        console.rule(outcome.status, style="green" if outcome.status == "done" else "red")
        console.print(outcome.summary)
        console.print(
            f"{outcome.reason} · {outcome.turns} turns · {outcome.duration:.1f}s · "
            f"${outcome.cost_usd:.4f} · {outcome.usage.input_tokens} in / "
            f"{outcome.usage.output_tokens} out",
            style="dim",
        )
