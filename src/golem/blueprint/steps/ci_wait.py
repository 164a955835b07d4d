"""Wait for the forge's verdict on one pushed commit, and judge what it reports.

Which jobs count: the ci node's ``required`` names (or globs) if it gives any, else the
checks the base branch requires on the forge, else every job reported. A job allowed to
fail, skipped or neutral never fails the verdict (nor is it waited for when allowed to
fail). Time is the monotonic clock's, from the start of the wait.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.model import CINode
from golem.blueprint.steps.ci_report import job_names
from golem.core.errors import ForgeRateLimited, ForgeUnavailable
from golem.forge import markdown
from golem.forge.ci import FINISHED_JOB_STATES, CIJob, CIStatus

__all__ = ["Verdict", "judge", "repo_name", "wait_for_ci"]

VerdictKind = Literal["passed", "failed", "no_ci", "timed_out", "missing"]
FAILING_STATES = frozenset({"failed", "cancelled"})


@dataclass
class Verdict:
    """What CI said of a commit: its kind, the failing jobs, and a note in words."""

    kind: VerdictKind
    note: str
    failing: list[CIJob] = field(default_factory=list)
    supported: bool = True
    """False: the forge has no CI at all (the local forge)."""


def repo_name(ex: Execution) -> str:
    """The pull request's repository on its forge."""
    pr = ex.state.pr
    return pr.repo if pr is not None else ex.state.request.repo


async def wait_for_ci(ex: Execution, node: CINode, commit: str) -> Verdict:
    """Look at the forge's jobs on ``commit`` every ``node.poll`` seconds until they judge
    it (or ``appear`` / ``wait`` run out). A forge away or rate limiting is asked again
    (within ``wait``); any other error of the forge is the node's."""
    began = time.monotonic()
    while True:
        try:
            status = await ex.forge.ci_status(repo_name(ex), commit, base=ex.state.base)
        except (ForgeUnavailable, ForgeRateLimited) as exc:
            if time.monotonic() - began >= node.wait:
                raise
            ex.note(f"the forge did not answer about CI; asking again: {exc.message}", node.id)
            await asyncio.sleep(node.poll)
            continue
        if not status.supported:
            where = "the local forge" if ex.forge.name == "local" else f"{ex.forge.name} here"
            return Verdict("no_ci", f"{where} runs no CI", supported=False)
        verdict = judge(node, status, time.monotonic() - began)
        if verdict is not None:
            return verdict
        await asyncio.sleep(node.poll)


def judge(node: CINode, status: CIStatus, elapsed: float) -> Verdict | None:
    """The verdict on ``status`` after ``elapsed`` seconds of waiting; None: wait on."""
    patterns = node.required or status.required or []
    absent = _absent(node, status, patterns)
    if absent is not None:
        return None if elapsed < node.appear else absent
    counted = _counted(status.jobs, patterns)
    pending = [j for j in counted if j.state not in FINISHED_JOB_STATES and not j.allowed_to_fail]
    if pending:
        late = Verdict("timed_out", f"still pending after {node.wait:g}s: {job_names(pending)}")
        return None if elapsed < node.wait else late
    failing = [j for j in counted if j.state in FAILING_STATES and not j.allowed_to_fail]
    if failing:
        states = ", ".join(f"{markdown.code(job.name)} {job.state}" for job in failing)
        return Verdict("failed", f"failing: {states}", failing)
    return Verdict("passed", f"{len(counted)} job(s) passed")


def _absent(node: CINode, status: CIStatus, patterns: list[str]) -> Verdict | None:
    """What the verdict is if nothing more appears: no job at all, or a required one
    missing; None when every job that must be there is."""
    if not status.jobs:
        return Verdict("no_ci", f"no CI job was reported within {node.appear:g}s")
    missing = [p for p in patterns if not any(_matches(job, p) for job in status.jobs)]
    if not missing:
        return None
    names = ", ".join(markdown.code(name) for name in missing)
    return Verdict(
        "missing",
        f"required check(s) {names} never created within {node.appear:g}s "
        f"(jobs reported: {job_names(status.jobs)})",
    )


def _counted(jobs: list[CIJob], patterns: list[str]) -> list[CIJob]:
    if not patterns:
        return jobs
    return [job for job in jobs if any(_matches(job, pattern) for pattern in patterns)]


def _matches(job: CIJob, pattern: str) -> bool:
    """A job's name (or a status's context, its id) against a name or glob."""
    return fnmatchcase(job.name, pattern) or (job.kind == "status" and fnmatchcase(job.id, pattern))
