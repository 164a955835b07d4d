"""Reports and comparisons as one self-contained HTML page (no script, no request for
anything else): the totals, the agreement matrix, and per task each attempt's verdict,
hidden tests and diff beside the gold patch. Everything shown is escaped: task text and
diffs come from repositories and agents."""

from __future__ import annotations

from html import escape

from golem.eval.compare import Comparison
from golem.eval.render import percent
from golem.eval.report import VERDICTS, EvalReport, TaskSummary
from golem.eval.results import Attempt

__all__ = ["comparison_html", "report_html"]

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f6f8fa}
pre{background:#f6f8fa;padding:.6em;overflow:auto;font:12px/1.35 ui-monospace,monospace}
.add{color:#116329;background:#dafbe1}.del{color:#82071e;background:#ffebe9}.hunk{color:#8250df}
.yes{color:#116329;font-weight:600}.no{color:#82071e;font-weight:600}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1em}details{margin:.4em 0}
"""
MAX_DIFF = 200_000


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        f"style-src 'unsafe-inline'\"><title>{escape(title)}</title><style>{STYLE}</style>"
        f"</head><body>{body}</body></html>\n"
    )


def diff_html(patch: str) -> str:
    """A unified diff, its lines coloured by kind."""
    if not patch.strip():
        return "<p><em>no change</em></p>"
    cut = patch[:MAX_DIFF]
    lines = []
    for line in cut.splitlines():
        kind = ""
        if line.startswith("+") and not line.startswith("+++"):
            kind = "add"
        elif line.startswith("-") and not line.startswith("---"):
            kind = "del"
        elif line.startswith("@@"):
            kind = "hunk"
        text = escape(line)
        lines.append(f"<span class='{kind}'>{text}</span>" if kind else text)
    more = f"\n… {len(patch) - MAX_DIFF} more characters" if len(patch) > MAX_DIFF else ""
    return "<pre>" + "\n".join(lines) + escape(more) + "</pre>"


def _yes(value: bool | None) -> str:
    if value is None:
        return "-"
    return "<span class='yes'>yes</span>" if value else "<span class='no'>no</span>"


def _totals(report: EvalReport) -> str:
    t, a = report.totals, report.agreement
    rows = [
        ("attempts run", f"{t.attempts} ({t.not_run} not run)"),
        ("resolved", f"{t.resolved} ({percent(t.resolve_rate)})"),
        ("pass@1", percent(t.pass_at_1)),
        *([(f"pass@{t.k}", percent(t.pass_at_k))] if t.k > 1 else []),
        ("cost", f"${t.cost_usd:.2f} (mean ${t.mean_cost_usd or 0:.2f})"),
        ("mean turns", f"{t.mean_turns or 0:.1f}"),
        (
            "mean wall time",
            f"{t.mean_seconds or 0:.1f}s (hidden tests {t.mean_tests_seconds or 0:.1f}s)",
        ),
        ("agreement", f"{a.agreed}/{a.judged} ({percent(a.rate)})"),
        ("verified but failing the hidden tests", str(a.verified_unresolved)),
        ("escalated but passing the hidden tests", str(a.escalated_resolved)),
    ]
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    matrix = "".join(
        f"<tr><th>{v}</th><td>{a.matrix[v]['resolved']}</td><td>{a.matrix[v]['unresolved']}</td></tr>"
        for v in VERDICTS
    )
    nodes = "".join(
        f"<tr><th>{escape(node)}</th><td>{seconds:.1f}s</td></tr>"
        for node, seconds in t.mean_node_seconds.items()
    )
    return (
        f"<table>{body}</table><h3>golem's verdict against the hidden tests</h3>"
        f"<table><tr><th>verdict</th><th>resolved</th><th>unresolved</th></tr>{matrix}</table>"
        f"<h3>where the time went (mean per run)</h3><table>{nodes}</table>"
    )


def _attempt(attempt: Attempt) -> str:
    if attempt.not_run:
        return f"<p>attempt {attempt.attempt}: not run: {escape(attempt.not_run)}</p>"
    tests = ""
    if attempt.score is not None:
        statuses = {**attempt.score.fail_to_pass, **attempt.score.pass_to_pass}
        tests = "".join(
            f"<tr><td>{escape(name)}</td><td>{escape(status)}</td></tr>"
            for name, status in statuses.items()
        )
    error = f"<p>{escape(attempt.error)}</p>" if attempt.error else ""
    return (
        f"<details><summary>attempt {attempt.attempt}: {escape(attempt.verdict or '')}, "
        f"resolved {_yes(attempt.resolved)}, ${attempt.cost_usd:.2f}, {attempt.turns} turns, "
        f"{attempt.seconds:.1f}s (run {escape(attempt.run_id or '')})</summary>{error}"
        f"<table><tr><th>hidden test</th><th>status</th></tr>{tests}</table>"
        f"{diff_html(attempt.patch)}</details>"
    )


def _task(report: EvalReport, summary: TaskSummary) -> str:
    attempts = [a for a in report.attempts if a.instance_id == summary.instance_id]
    gold = report.gold.get(summary.instance_id)
    gold_html = f"<details><summary>gold patch</summary>{diff_html(gold)}</details>" if gold else ""
    return (
        f"<h3 id='{escape(summary.instance_id)}'>{escape(summary.instance_id)}: resolved "
        f"{summary.resolved}/{summary.attempts}</h3>"
        + "".join(_attempt(a) for a in attempts)
        + gold_html
    )


def report_html(report: EvalReport) -> str:
    """The report as a page."""
    settings = report.settings
    body = (
        f"<h1>golem eval: {escape(report.label)}</h1><p>golem "
        f"{escape(settings.golem_version)}, tasks {escape(settings.tasks)}</p>"
        f"{_totals(report)}<h2>tasks</h2>"
        + "".join(_task(report, summary) for summary in report.tasks)
    )
    return _page(f"golem eval: {report.label}", body)


def comparison_html(comparison: Comparison) -> str:
    """The comparison as a page: the totals side by side, then each task's attempts."""
    a, b = comparison.a, comparison.b
    differs = "".join(f"<li>{escape(d)}</li>" for d in comparison.differs)
    rows = "".join(
        f"<tr><td><a href='#{escape(t.instance_id)}'>{escape(t.instance_id)}</a></td>"
        f"<td>{_count(t.a)}</td><td>{_count(t.b)}</td><td>{escape(t.change)}</td></tr>"
        for t in comparison.tasks
    )
    tasks = "".join(
        f"<h3 id='{escape(t.instance_id)}'>{escape(t.instance_id)}</h3><div class='cols'>"
        f"<div><h4>A</h4>{_side(a, t.instance_id)}</div>"
        f"<div><h4>B</h4>{_side(b, t.instance_id)}</div></div>"
        for t in comparison.tasks
    )
    body = (
        f"<h1>golem eval compare</h1><p>A: {escape(a.label)} (golem "
        f"{escape(a.settings.golem_version)})<br>B: {escape(b.label)} (golem "
        f"{escape(b.settings.golem_version)})</p><ul>{differs}</ul><div class='cols'>"
        f"<div><h2>A</h2>{_totals(a)}</div><div><h2>B</h2>{_totals(b)}</div></div>"
        f"<h2>tasks</h2><p>B gained {comparison.gained}, lost {comparison.lost}</p>"
        f"<table><tr><th>task</th><th>A</th><th>B</th><th>change</th></tr>{rows}</table>{tasks}"
    )
    return _page("golem eval compare", body)


def _count(summary: TaskSummary | None) -> str:
    if summary is None or not summary.attempts:
        return "-"
    return f"{summary.resolved}/{summary.attempts}"


def _side(report: EvalReport, instance_id: str) -> str:
    attempts = [a for a in report.attempts if a.instance_id == instance_id]
    return "".join(_attempt(a) for a in attempts) or "<p>not in this evaluation</p>"
