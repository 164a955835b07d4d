"""Reports and comparisons as terminal tables (rich)."""

from __future__ import annotations

from rich.table import Table

from golem.core.console import GolemConsole, markup
from golem.eval.compare import Comparison
from golem.eval.report import VERDICTS, EvalReport, TaskSummary, Totals

__all__ = ["percent", "print_comparison", "print_report"]


def percent(value: float | None) -> str:
    """A share as a percentage ("-" when there is nothing to share)."""
    return "-" if value is None else f"{100 * value:.1f}%"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _verdicts(summary: TaskSummary | None) -> str:
    if summary is None:
        return ""
    return " ".join(f"{name}:{n}" for name, n in sorted(summary.verdicts.items()))


def _resolved(summary: TaskSummary | None) -> str:
    if summary is None:
        return "-"
    if not summary.attempts:
        return "not run"
    return f"{summary.resolved}/{summary.attempts}"


def print_report(console: GolemConsole, report: EvalReport) -> None:
    """Per task, in total, the agreement of golem's verdicts with the hidden tests, and
    where the time went."""
    settings = report.settings
    console.print(
        markup(
            "[bold]{}[/] (golem {}, {} attempt(s) per task)",
            report.label,
            settings.golem_version,
            settings.attempts,
        )
    )
    table = Table(box=None, title_justify="left")
    for column in ("TASK", "RESOLVED", "VERDICTS", "COST", "TURNS", "TIME"):
        table.add_column(column, overflow="fold")
    for task in report.tasks:
        table.add_row(
            task.instance_id,
            _resolved(task),
            _verdicts(task),
            f"${task.cost_usd:.2f}",
            f"{task.turns:.0f}",
            _seconds(task.seconds),
        )
    console.print(table)
    _print_totals(console, report.totals)
    _print_agreement(console, report)
    for task in report.tasks:
        if task.not_run:
            console.print(f"not run: {task.instance_id}: {task.not_run}")


def _print_totals(console: GolemConsole, totals: Totals) -> None:
    at_k = f", pass@{totals.k} {percent(totals.pass_at_k)}" if totals.k > 1 else ""
    console.print(
        f"resolved {totals.resolved} of {totals.attempts} attempt(s) "
        f"({percent(totals.resolve_rate)}); pass@1 {percent(totals.pass_at_1)}{at_k}; "
        f"{totals.not_run} not run"
    )
    console.print(
        f"cost ${totals.cost_usd:.2f} (mean ${totals.mean_cost_usd or 0:.2f}); mean turns "
        f"{totals.mean_turns or 0:.1f}; mean wall time {_seconds(totals.mean_seconds)}, hidden "
        f"tests {_seconds(totals.mean_tests_seconds)}"
    )
    if totals.mean_node_seconds:
        spent = ", ".join(f"{node} {s:.1f}s" for node, s in totals.mean_node_seconds.items())
        console.print(f"time by node (mean per run): {spent}")


def _print_agreement(console: GolemConsole, report: EvalReport) -> None:
    agreement = report.agreement
    table = Table(title="golem's verdict against the hidden tests", box=None, title_justify="left")
    for column in ("VERDICT", "RESOLVED", "UNRESOLVED"):
        table.add_column(column)
    for verdict in VERDICTS:
        row = agreement.matrix[verdict]
        table.add_row(verdict, str(row["resolved"]), str(row["unresolved"]))
    console.print(table)
    console.print(
        f"agreement {agreement.agreed}/{agreement.judged} ({percent(agreement.rate)}): "
        f"{agreement.verified_unresolved} verified but failing the hidden tests, "
        f"{agreement.escalated_resolved} escalated but passing them; verified precision "
        f"{percent(agreement.verified_precision)}"
    )


def print_comparison(console: GolemConsole, comparison: Comparison) -> None:
    """Task by task and in total, A beside B."""
    a, b = comparison.a, comparison.b
    console.print(markup("A: [bold]{}[/] (golem {})", a.label, a.settings.golem_version))
    console.print(markup("B: [bold]{}[/] (golem {})", b.label, b.settings.golem_version))
    for difference in comparison.differs:
        console.print(f"differs: {difference}")
    table = Table(box=None)
    for column in ("TASK", "A", "B", "A VERDICTS", "B VERDICTS", "CHANGE"):
        table.add_column(column, overflow="fold")
    for task in comparison.tasks:
        table.add_row(
            task.instance_id,
            _resolved(task.a),
            _resolved(task.b),
            _verdicts(task.a),
            _verdicts(task.b),
            task.change,
        )
    console.print(table)
    for name, report in (("A", a), ("B", b)):
        totals, agreement = report.totals, report.agreement
        at_k = f", pass@{totals.k} {percent(totals.pass_at_k)}" if totals.k > 1 else ""
        console.print(
            f"{name}: resolved {percent(totals.resolve_rate)}, pass@1 "
            f"{percent(totals.pass_at_1)}{at_k}, cost ${totals.cost_usd:.2f}, "
            f"agreement {percent(agreement.rate)}"
        )
    console.print(f"B gained {comparison.gained} task(s) and lost {comparison.lost}")
