"""Live progress of an agent run on a terminal: what the model says and does, turn by turn."""

from __future__ import annotations

from rich.console import Console

from golem.agent.events import (
    AgentEvent,
    AgentFinished,
    AgentStarted,
    ExternalOutput,
    ModelAnswered,
    ModelDelta,
    ModelWaited,
    ToolFinished,
    ToolStarted,
)
from golem.cli.printable import printable

__all__ = ["AgentProgress", "describe_call", "first_line"]

WIDTH = 100


def first_line(text: str, width: int = WIDTH) -> str:
    """The first non-empty line of ``text``, cut to ``width``."""
    line = next((part for part in text.strip().splitlines() if part.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def describe_call(name: str, arguments: dict[str, object]) -> str:
    """A tool call in one line: its name and its most telling argument."""
    for key in ("command", "path", "pattern", "summary"):
        if key in arguments:
            return f"{name} {first_line(str(arguments[key]), WIDTH - len(name))}"
    return name


class AgentProgress:
    """An event sink that prints a compact log: text as it streams, each tool call and
    its result, tokens and cost after each model call, and the outcome."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._streaming = False

    def __call__(self, event: AgentEvent) -> None:
        """Print one event."""
        if isinstance(event, ModelDelta):
            self.console.print(printable(event.text), end="", style="cyan", highlight=False)
            self._streaming = True
            return
        if self._streaming:
            self.console.print()
            self._streaming = False
        if isinstance(event, AgentStarted):
            self.console.print(
                f"[bold]golem agent[/] {printable(event.model)} · tools: "
                f"{printable(', '.join(event.tools))}"
            )
        elif isinstance(event, ModelAnswered):
            self._answered(event)
        elif isinstance(event, ToolStarted):
            line = describe_call(event.call.name, event.call.arguments)
            self.console.print(f"  [bold]→[/] {printable(line)}", highlight=False)
        elif isinstance(event, ToolFinished):
            mark = "[red]✗[/]" if event.is_error else "[green]✓[/]"
            self.console.print(f"    {mark} {printable(first_line(event.output))}", highlight=False)
        elif isinstance(event, ModelWaited):
            said = f" ({printable(event.header)})" if event.header else ""
            self.console.print(
                f"  [yellow]waited {event.seconds:.1f}s for the provider[/]: "
                f"{printable(first_line(event.reason))}{said}",
                highlight=False,
            )
        elif isinstance(event, ExternalOutput):
            style = "dim" if event.stream != "golem" else "yellow"
            self.console.print(f"  [{style}]{printable(event.line)}[/]", highlight=False)
        elif isinstance(event, AgentFinished):
            self._finished(event)

    def _answered(self, event: ModelAnswered) -> None:
        usage = event.response.usage
        read = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        self.console.print(
            f"[dim]turn {event.turn} · {read} in / {usage.output_tokens} out · "
            f"${event.cost_so_far:.4f}[/]"
        )

    def _finished(self, event: AgentFinished) -> None:
        outcome = event.outcome
        colour = "green" if outcome.status == "done" else "red"
        self.console.print(
            f"[bold {colour}]{outcome.status}[/] after {outcome.turns} turns, "
            f"{outcome.duration:.1f}s, ${outcome.cost_usd:.4f}: {printable(outcome.reason)}"
        )
        if outcome.summary and outcome.summary != outcome.reason:
            self.console.print(printable(outcome.summary))
