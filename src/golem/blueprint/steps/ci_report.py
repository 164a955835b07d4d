"""What CI rounds say: the failing jobs for a fix prompt, a round's note, and what still
fails when the pull request goes to a person.

Everything here is text about the forge's jobs; what a log holds is the forge's, so it is
masked with the run's secrets before it is kept or shown (``RunSecrets.mask``). Every
string of a job (its name, workflow, link, steps, summary, log) is the forge's, written
by the pull request's own workflow: it goes into this markdown only as code
(``golem.forge.markdown``), so no name can mention anyone or break out of its place.
"""

from __future__ import annotations

import re

from golem.blueprint.state import CIRound, RunState
from golem.checks import CheckResult
from golem.forge import markdown
from golem.forge.ci import CIJob

__all__ = ["describe_jobs", "fix_failures", "job_line", "job_names", "still_failing"]

LOG_TAIL_CHARS = 4_000
"""Of each failing job's log tail, what a fix prompt shows (its end)."""


def job_line(job: CIJob) -> str:
    """``name`` (group) state: url · failed steps: ..., one line."""
    group = f" ({markdown.code(job.group)})" if job.group else ""
    url = f": {markdown.code(job.url)}" if job.url else ""
    steps = f" · failed steps: {_codes(job.failed_steps)}" if job.failed_steps else ""
    summary = f" · {markdown.code(job.summary)}" if job.summary else ""
    return f"{markdown.code(job.name)}{group} {job.state}{url}{steps}{summary}"


def job_names(jobs: list[CIJob]) -> str:
    """The jobs' names, as code, comma-separated (``none`` for none)."""
    return _codes([job.name for job in jobs]) or "none"


def _codes(texts: list[str]) -> str:
    return ", ".join(markdown.code(text) for text in texts)


SHOWN_JOBS = 5
"""Failing jobs a note or a fix prompt details; the others are named."""


def describe_jobs(jobs: list[CIJob]) -> str:
    """One line per job (the first few), as a round's note keeps them."""
    return "\n".join([*(f"- {job_line(job)}" for job in jobs[:SHOWN_JOBS]), *_more(jobs)])


def _more(jobs: list[CIJob]) -> list[str]:
    rest = jobs[SHOWN_JOBS:]
    if not rest:
        return []
    names = job_names(rest[:20]) + (", ..." if len(rest) > 20 else "")
    return [f"... and {len(rest)} more failing: {names}"]


def fix_failures(jobs: list[CIJob], checks: list[CheckResult], local: str = "") -> str:
    """The ``{{ failures }}`` of a CI fix prompt: each failing job with its failed steps and
    the end of its log; where a check golem ran passed in its box, that it fails only in
    CI; then ``local``: what golem's own checks said of the last fix, if it failed them."""
    parts = [_job_section(job, checks) for job in jobs[:SHOWN_JOBS]] + _more(jobs)
    if local:
        parts.append(
            "Your last fix was not pushed: golem's own checks failed on it:\n\n" + local.strip()
        )
    return "\n\n".join(parts)


def _job_section(job: CIJob, checks: list[CheckResult]) -> str:
    group = f" ({markdown.code(job.group)})" if job.group else ""
    lines = [f"### {markdown.code(job.name)}{group}"]
    url = f" · {markdown.code(job.url)}" if job.url else ""
    lines.append(f"CI says: {_state_words(job)}{url}")
    if job.failed_steps:
        lines.append(f"Failed steps: {_codes(job.failed_steps)}")
    if job.summary:
        lines.append(f"Summary: {markdown.code(job.summary)}")
    for check in _passed_locally(job, checks):
        lines.append(
            f"The {check.name} check passed in golem's box ({markdown.code(check.command)}) "
            "but fails in CI: look for what differs (versions, environment, services, steps "
            "golem did not run)."
        )
    tail = job.log_tail.strip()
    if tail:
        lines += ["End of its log:", markdown.block(tail[-LOG_TAIL_CHARS:])]
    return "\n".join(lines)


def _state_words(job: CIJob) -> str:
    if job.state == "cancelled":
        return "cancelled (it did not finish: a timeout, or someone stopped it)"
    return job.state


def _passed_locally(job: CIJob, checks: list[CheckResult]) -> list[CheckResult]:
    """golem's passing checks this job seems to run: its command in the job's log, or the
    check's name (test, lint, build) a word of the job's name or failed steps."""
    words = set(re.findall(r"[a-z]+", " ".join([job.name, *job.failed_steps]).lower()))
    return [
        check
        for check in checks
        if check.passed and (check.command in job.log_tail or check.name in words)
    ]


def still_failing(state: RunState) -> str:
    """Why the pull request needs a person: the last CI round's verdict and note, else the
    run's error (as a code block: it may carry any forge's or box's text), else the checks
    that fail."""
    last: CIRound | None = state.ci[-1] if state.ci else None
    heads = {
        "failed": f"CI still fails on {{commit}} after {state.ci_rounds} CI fix round(s):",
        "timed_out": "CI did not finish on {commit}:",
        "missing": "a required check never ran on {commit}:",
        "no_ci": "CI never judged {commit}, and this blueprint wants it to:",
    }
    if last is not None and last.verdict in heads:
        head = heads[last.verdict].format(commit=last.commit[:12])
        return f"{head}\n\n{last.note}".strip()
    if state.error:
        return f"golem stopped:\n\n{markdown.block(state.error)}"
    failing = [f"- {c.name} ({markdown.code(c.command)})" for c in state.checks if not c.passed]
    return "\n".join(["golem's checks fail:", *failing]) if failing else "golem could not finish"
