"""A blueprint's graph as text (one line per node, with what it does and where it leads),
and a run's check results in words, as the CLI, the report and the pull request show them."""

from __future__ import annotations

from golem.blueprint.model import (
    END,
    AgentNode,
    Blueprint,
    BoxNode,
    CINode,
    GateNode,
    HostNode,
    LoopNode,
    Node,
)
from golem.blueprint.state import AttemptRecord, CIRound
from golem.checks import CheckResult

__all__ = [
    "attempt_line",
    "check_outcome",
    "ci_round_cells",
    "describe_node",
    "draw",
    "failing_tests",
]


def describe_node(node: Node) -> str:
    """What a node does, in a few words."""
    if isinstance(node, HostNode):
        return f"host: {node.action}"
    if isinstance(node, BoxNode):
        return _describe_box(node)
    if isinstance(node, AgentNode):
        who = f"external {node.external}" if node.external else ", ".join(node.tools)
        return f"agent ({who})"
    if isinstance(node, GateNode):
        timeout = f"{node.timeout:g}s" if node.timeout is not None else "no timeout"
        return f"gate: waits for a person, {timeout}, then {node.default}"
    if isinstance(node, CINode):
        return f"ci: wait for the forge's CI; fix with an agent, at most {node.ci_rounds} rounds"
    assert isinstance(node, LoopNode)
    return f"loop: {', '.join(node.checks)}; fix with an agent, at most {node.max_rounds} rounds"


def _describe_box(node: BoxNode) -> str:
    if node.baseline:
        return f"box: {node.baseline}'s checks on the base commit"
    return f"box: {node.check} check" if node.check else f"box: {' && '.join(node.run)}"


def _edges(node: Node) -> str:
    if isinstance(node.next, str):
        return f"-> {node.next}"
    return "  ".join(f"{outcome} -> {target}" for outcome, target in node.next.items())


def draw(blueprint: Blueprint) -> str:
    """The graph, from the first node on, each node once; cycles show as edges back."""
    lines = [f"{blueprint.name}: {blueprint.description}".rstrip(": ")]
    width = max(len(node.id) for node in blueprint.nodes)
    order: list[str] = []
    todo = [blueprint.first]
    while todo:  # depth first, first edge first: the happy path, then the branches
        current = todo.pop()
        if current == END or current in order:
            continue
        order.append(current)
        todo.extend(reversed(blueprint.node(current).targets()))
    for node_id in order:
        node = blueprint.node(node_id)
        marker = ">" if node_id == blueprint.first else " "
        lines.append(f"{marker} {node_id:<{width}}  {describe_node(node)}")
        lines.append(f"  {'':<{width}}    {_edges(node)}")
    return "\n".join(lines)


def check_outcome(check: CheckResult) -> str:
    """A check's result in words: ``passed``, ``flaky (failed, then passed)``, ``failed
    (exit 1)``, ``failed (out of memory)``, with ``· fails on the base commit too`` when the
    baseline had it failing already."""
    if check.passed:
        return "flaky (failed, then passed)" if check.flaky else "passed"
    why = check.reason or ("timed out" if check.timed_out else f"exit {check.exit_code}")
    outcome = f"flaky (failed, {why})" if check.flaky else f"failed ({why})"
    if check.progress is not None and not check.preexisting:
        outcome += f" · {check.progress}"
    return outcome + (" · fails on the base commit too" if check.preexisting else "")


def failing_tests(checks: list[CheckResult], limit: int = 20) -> list[str]:
    """The failing tests the checks' outputs name (``check: test``), at most ``limit``,
    with a last line saying how many more there are."""
    names = [f"{check.name}: {failure.name}" for check in checks for failure in check.failures]
    more = len(names) - limit
    return names[:limit] + ([f"... and {more} more"] if more > 0 else [])


def ci_round_cells(ci: CIRound) -> tuple[str, str, str, str, str, str]:
    """A CI round as the CLI shows it: round, commit, verdict, failing jobs, how long CI
    took on it, what the fix after it cost."""
    took = f"{ci.ended - ci.started:.1f}s" if ci.ended is not None else "waiting"
    cost = f"${ci.cost_usd:.4f}" if ci.cost_usd else "-"
    return (str(ci.round), ci.commit[:12], ci.verdict, ", ".join(ci.failing) or "-", took, cost)


def attempt_line(attempt: AttemptRecord) -> str:
    """A best-of-N attempt in one line, as `golem runs show` prints it (text of the box's
    made printable by the caller)."""
    diff = "-" if attempt.diff_lines is None else f"{attempt.diff_lines} lines"
    passed = f"{attempt.passing}/{len(attempt.checks)} checks"
    return (
        f"{attempt.number}: {attempt.status:<10} {passed:<11} {diff:>10} "
        f"${attempt.cost_usd:.4f}  {' '.join(attempt.verdict.split())}"
        + (f"; the judge: {' '.join(attempt.judged.split())}" if attempt.judged else "")
    )
