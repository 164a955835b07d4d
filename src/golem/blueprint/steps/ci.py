"""CI rounds: wait for the forge's verdict on the pushed commit, fix, push, wait again.

After ship, the forge's CI judges the branch. While it fails and rounds are left, a fix
round gives the agent the failing jobs (failed steps, log tails, masked), verifies its fix
with golem's own checks (what is pushed is what passed locally), commits it on the same
branch (trailers ``Golem-Run`` and ``Golem-CI-Round``) and pushes it. Every round is kept in
``state.ci`` and saved as it changes: a resumed run waits on the commit of its last round
and never pushes a fix twice. The run's box is closed while CI runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.model import CINode, LoopNode
from golem.blueprint.state import CIRound
from golem.blueprint.steps.agent import run_agent
from golem.blueprint.steps.ci_report import SHOWN_JOBS, describe_jobs, fix_failures
from golem.blueprint.steps.ci_wait import Verdict, repo_name, wait_for_ci
from golem.blueprint.steps.publish import TRAILER, commit_change, find_change, push_change
from golem.blueprint.steps.verify import verify
from golem.checks import describe_failures, held_against
from golem.core.ansi import clean
from golem.core.errors import ForgeError
from golem.forge.ci import CIJob

__all__ = ["CI_TRAILER", "run_ci"]

CI_TRAILER = "Golem-CI-Round"
Result = tuple[Literal["success", "failure"], str]


@dataclass
class Fix:
    """What a fix round left: the commit it pushed, or why it pushed none."""

    commit: str | None
    local: str = ""
    stop: str = ""


async def run_ci(ex: Execution, node: CINode) -> Result:
    """Wait for CI on the run's pushed commit; fix at most ``node.ci_rounds`` times."""
    state = ex.state
    if state.pr is None or state.commit is None:
        note = "no pull request was shipped: there is no CI to watch"
        ex.note(note, node.id)
        return "success", note
    commit = await _pushed_before_crash(ex, node) or state.commit
    record, verdict = await _wait(ex, node, commit)
    local = ""
    while verdict.kind == "failed" and state.ci_rounds < node.ci_rounds:
        fix = await _fix_round(ex, node, verdict.failing, local)
        if fix.stop:
            return "failure", fix.stop
        if fix.commit is None:
            local = fix.local  # the next round's agent hears why it was not pushed
            continue
        local = ""
        record, verdict = await _wait(ex, node, fix.commit)
    return await _conclude(ex, node, record, verdict)


async def _wait(ex: Execution, node: CINode, commit: str) -> tuple[CIRound, Verdict]:
    """Wait on ``commit`` (a resumed run goes on with its last round's record) and keep
    the verdict in the round."""
    state = ex.state
    await ex.close()  # nothing runs in the box while CI does; a fix gets a new one
    record = state.ci[-1] if state.ci and state.ci[-1].commit == commit else None
    if record is None:
        record = CIRound(round=state.ci_rounds, commit=commit, started=time.time())
        state.ci.append(record)
    record.verdict, record.ended = "waiting", None
    ex.save()
    ex.note(f"waiting for CI on {commit[:12]} (CI round {record.round})", node.id)
    verdict = await wait_for_ci(ex, node, commit)
    if verdict.kind == "failed":
        verdict.failing = await _with_failures(ex, verdict.failing)
        verdict.note = f"{verdict.note}\n{describe_jobs(verdict.failing)}"
    record.verdict, record.ended = verdict.kind, time.time()
    record.failing = [job.name for job in verdict.failing]
    record.note = ex.secrets.mask(verdict.note)
    ex.save()
    ex.note(f"CI on {commit[:12]}: {verdict.kind}: {record.note}", node.id)
    return record, verdict


async def _with_failures(ex: Execution, jobs: list[CIJob]) -> list[CIJob]:
    """The first failing jobs with their failed steps and log tails (masked); the rest as
    the status gave them. A log the forge cannot give is noted, not an error."""
    read: list[CIJob] = []
    for job in jobs[:SHOWN_JOBS]:
        try:
            detailed = await ex.forge.ci_failure(repo_name(ex), job)
        except ForgeError as exc:
            ex.note(f"could not read CI job {job.name}'s log: {exc.message}")
            detailed = job
        read.append(ex.secrets.mask_model(detailed))
    return read + [ex.secrets.mask_model(job) for job in jobs[SHOWN_JOBS:]]


async def _fix_round(ex: Execution, node: CINode, failing: list[CIJob], local: str) -> Fix:
    """One CI fix round: the agent, golem's checks, a commit pushed to the branch."""
    state = ex.state
    number = state.ci_rounds + 1
    trailers = {CI_TRAILER: str(number), TRAILER: state.id}
    commit = await find_change(ex, trailers, since=state.base)  # made before a crash
    if commit is None:
        refused = await _fix(ex, node, number, failing, local)
        if refused is not None:
            return refused
        commit = await commit_change(ex, _message(ex, number, failing), trailers, since=state.base)
        if commit is None:
            return Fix(None, local="Your last fix changed no file: nothing was pushed.")
    await _push_fix(ex, node, number, commit)
    return Fix(commit)


async def _pushed_before_crash(ex: Execution, node: CINode) -> str | None:
    """A resumed run whose last fix round had begun (its agent ran) but whose commit is
    not yet a round: that commit, found by its trailers, pushed now (None: there is none,
    the last round's commit is the one to wait on)."""
    state = ex.state
    if not state.ci or state.ci_rounds <= state.ci[-1].round:
        return None
    number = state.ci_rounds
    trailers = {CI_TRAILER: str(number), TRAILER: state.id}
    commit = await find_change(ex, trailers, since=state.base)
    if commit is not None:
        await _push_fix(ex, node, number, commit)
    return commit


async def _push_fix(ex: Execution, node: CINode, number: int, commit: str) -> None:
    """Push the fix of round ``number`` and make it the commit CI is waited on."""
    state = ex.state
    state.ci_rounds = max(state.ci_rounds, number)
    await push_change(ex, since=state.base)
    state.commit = commit
    state.ci.append(CIRound(round=number, commit=commit, started=time.time()))
    ex.save()
    ex.note(f"CI fix round {number}: pushed {commit[:12]}", node.id)


async def _fix(
    ex: Execution, node: CINode, number: int, failing: list[CIJob], local: str
) -> Fix | None:
    """The agent's fix, then golem's checks on it; None when it may be pushed."""
    state = ex.state
    spent = state.cost_usd
    failures = ex.secrets.mask(fix_failures(failing, state.checks, local))
    outcome = await run_agent(
        ex, node.id, node.fix, failures=failures, round=number, max_rounds=node.ci_rounds
    )
    state.ci_rounds = number
    state.ci[-1].cost_usd += state.cost_usd - spent
    ex.save()
    if outcome is None:
        return Fix(None, stop="the run's budget is spent: no CI fix round could run")
    loop = _verify_loop(ex, node)
    if loop is None:
        ex.note("no verify loop to check a CI fix with: pushed as the agent left it", node.id)
        return None
    results = await verify(ex, loop, round_=state.rounds + number)
    state.checks = results
    ex.save()
    if held_against(results):
        ex.note(f"CI fix round {number} fails golem's checks: not pushed", node.id)
        if state.ci_rounds >= node.ci_rounds:
            return Fix(None, stop="the last CI fix fails golem's own checks: nothing pushed")
        return Fix(None, local=describe_failures(results))
    return None


def _verify_loop(ex: Execution, node: CINode) -> LoopNode | None:
    """The loop whose checks verify a CI fix: the node's ``verify``, else the blueprint's
    only loop."""
    if node.verify is not None:
        found = ex.blueprint.node(node.verify)
        return found if isinstance(found, LoopNode) else None
    loops = [n for n in ex.blueprint.nodes if isinstance(n, LoopNode)]
    return loops[0] if len(loops) == 1 else None


def _message(ex: Execution, number: int, failing: list[CIJob]) -> str:
    names = ", ".join(clean(job.name, multiline=False) for job in failing[:3]) or "CI"
    summary = ex.state.summary or "(the agent gave no summary)"
    return f"fix: make {names} pass in CI (CI round {number})\n\n{summary}\n"


async def _conclude(ex: Execution, node: CINode, record: CIRound, verdict: Verdict) -> Result:
    state = ex.state
    rounds = f"after {state.ci_rounds} CI fix round(s)"
    if verdict.kind == "passed":
        if state.ci_rounds:
            await _comment_on_pr(ex, f"CI passes on {record.commit[:12]} {rounds}.")
        return "success", f"CI passed on {record.commit[:12]} {rounds}"
    if verdict.kind == "no_ci" and (not verdict.supported or node.when_silent == "pass"):
        stands = "" if not verdict.supported else ": golem's own checks stand"
        return "success", f"{record.note}{stands}"
    return "failure", f"CI {verdict.kind} on {record.commit[:12]} {rounds}: {record.note}"


async def _comment_on_pr(ex: Execution, text: str) -> None:
    pr = ex.state.pr
    assert pr is not None
    comment = ex.forge.comment(pr.as_issue(), ex.secrets.mask(text))
    await ex.quietly(comment, "comment on the pull request")
