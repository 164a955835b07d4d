"""What a chat or tracker source shows of a run: its state reduced to what a person in a
thread follows (the step it is at, its checks, what it cost, the gate it waits at, its pull
request, and why it ended as it did). Every string is the run's own, masked by the run
already; a source masks it again with the secrets it knows, and escapes it for its own
markup, before it shows it."""

from __future__ import annotations

from dataclasses import dataclass

from golem.blueprint import RunState

__all__ = ["Check", "RunProgress", "progress_of"]

REASON_LIMIT = 1500


@dataclass(frozen=True)
class Check:
    """One of the repository's checks as the run last ran it."""

    name: str
    passed: bool
    flaky: bool = False


@dataclass(frozen=True)
class RunProgress:
    """A run as a thread follows it."""

    run_id: str
    status: str
    title: str
    step: str | None
    """The node it is at (None: it has not started, or it ended)."""
    checks: tuple[Check, ...]
    cost_usd: float
    gate: str | None
    """The question of the gate it waits at (None: it waits at none)."""
    paused: str | None
    """Why it is paused (its model provider down), and until when."""
    pr_url: str | None
    pr_number: int | None
    follow_up: bool
    summary: str
    reason: str | None
    """Why it ended as it did, when it did not simply succeed: its error, what still
    fails, why nothing verified it."""

    @property
    def finished(self) -> bool:
        """Whether the run is over."""
        return self.status in ("succeeded", "unverified", "escalated", "failed", "cancelled")


def progress_of(state: RunState) -> RunProgress:
    """What a thread shows of ``state``."""
    waiting = state.status == "waiting"
    gate = state.gate
    asked = gate.message if waiting and gate is not None and gate.decision is None else None
    paused = state.pause.reason if waiting and state.pause is not None else None
    return RunProgress(
        run_id=state.id,
        status=state.status,
        title=state.title,
        step=None if state.finished else state.current,
        checks=_checks(state),
        cost_usd=state.cost_usd,
        gate=asked,
        paused=paused,
        pr_url=state.pr.url if state.pr is not None else None,
        pr_number=state.pr.number if state.pr is not None else None,
        follow_up=state.request.follow_up is not None,
        summary=state.summary,
        reason=_clip(_reason(state)) if state.finished else None,
    )


def _checks(state: RunState) -> tuple[Check, ...]:
    """Each check's latest result, in the order they first ran."""
    latest: dict[str, Check] = {}
    for result in state.checks:
        latest[result.name] = Check(result.name, result.passed, result.flaky)
    return tuple(latest.values())


def _reason(state: RunState) -> str | None:
    said = {
        "succeeded": None,
        "cancelled": state.error or "cancelled on request",
        "unverified": state.unverified or "no check verified the change",
    }
    if state.status in said:
        return said[state.status]
    last = state.ci[-1] if state.ci else None
    if state.status == "escalated" and last is not None and last.verdict != "passed":
        return f"CI {last.verdict.replace('_', ' ')} on {last.commit[:12]}: {last.note}".strip()
    failing = [c.name for c in _checks(state) if not c.passed]
    if state.error or not failing:
        return state.error or "golem could not finish"
    return f"checks still fail: {', '.join(failing)}"


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= REASON_LIMIT:
        return text
    return text[: REASON_LIMIT - 1] + "…"
