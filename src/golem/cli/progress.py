"""Live progress of an agent run on a terminal: what the model says and does, turn by turn."""

from __future__ import annotations

from rich.text import Text

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
from golem.core.console import GolemConsole, markup, styled

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

    def __init__(self, console: GolemConsole) -> None:
        self.console = console
        self._streaming = False

    def __call__(self, event: AgentEvent) -> None:
        """Print one event."""
        if isinstance(event, ModelDelta):
            self.console.print(event.text, end="", style="cyan", highlight=False)
            self._streaming = True
            return
        if self._streaming:
            self.console.print()
            self._streaming = False
        if isinstance(event, AgentStarted):
            tools = ", ".join(event.tools)
            self.console.print(markup("[bold]golem agent[/] {} · tools: {}", event.model, tools))
        elif isinstance(event, ModelAnswered):
            self._answered(event)
        elif isinstance(event, ToolStarted):
            line = describe_call(event.call.name, event.call.arguments)
            self.console.print(markup("  [bold]→[/] {}", line), highlight=False)
        elif isinstance(event, ToolFinished):
            mark = Text("    ✗", style="red") if event.is_error else Text("    ✓", style="green")
            self.console.print(mark, first_line(event.output), highlight=False)
        elif isinstance(event, ModelWaited):
            said = f" ({event.header})" if event.header else ""
            self.console.print(
                markup(
                    "  [yellow]waited {:.1f}s for the provider[/]: {}{}",
                    event.seconds,
                    first_line(event.reason),
                    said,
                ),
                highlight=False,
            )
        elif isinstance(event, ExternalOutput):
            style = "dim" if event.stream != "golem" else "yellow"
            self.console.print(styled(f"  {event.line}", style), highlight=False)
        elif isinstance(event, AgentFinished):
            self._finished(event)

    def _answered(self, event: ModelAnswered) -> None:
        usage = event.response.usage
        read = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        self.console.print(
            markup(
                "[dim]turn {} · {} in / {} out · ${:.4f}[/]",
                event.turn,
                read,
                usage.output_tokens,
                event.cost_so_far,
            )
        )

    def _finished(self, event: AgentFinished) -> None:
        outcome = event.outcome
        colour = "bold green" if outcome.status == "done" else "bold red"
        self.console.print(
            styled(outcome.status, colour),
            markup(
                "after {} turns, {:.1f}s, ${:.4f}: {}",
                outcome.turns,
                outcome.duration,
                outcome.cost_usd,
                outcome.reason,
            ),
        )
        if outcome.summary and outcome.summary != outcome.reason:
            self.console.print(outcome.summary)
