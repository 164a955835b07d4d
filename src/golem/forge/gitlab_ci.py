"""GitLab CI as golem reads it: the jobs of a commit's newest pipeline beside its external
commit statuses, and a failed job's trace cut to what matters.

A trace is read as a bounded tail (a job's log can be gigabytes). GitLab's runner wraps
each phase of a job in ``section_start:TIME:NAME`` / ``section_end:TIME:NAME`` markers
(``step_script``, ``after_script``, ``upload_artifacts_on_failure`` ...): the section the
job failed in (the one still open, else the last that is not the runner's own cleanup)
names the failed step, and its text and whatever the runner printed after it (``ERROR: Job
failed: exit code 1``) are the log tail, markers and ANSI codes removed.

A project whose CI/CD is switched off has no CI (``supported`` False), as the local forge.
A ``manual`` job reads as ``skipped``: it runs only when a person starts it, so waiting for
it (a blocking deploy after the tests, say) would only wait for the timeout.
"""

from __future__ import annotations

import re
from typing import Any

from golem.core.ansi import plain
from golem.core.errors import ForgeAuthError
from golem.forge.ci import CIJob, CIStatus, JobState
from golem.forge.gitlab_api import GitLabAPI, project_id
from golem.forge.rest import MAX_DOWNLOAD

__all__ = ["failed_section", "read_ci_status", "read_job_failure"]

TRACE_BYTES = 512 * 1024
"""How much of a trace's end is read."""
TAIL_LINES = 200
TAIL_CHARS = 16_000
STATES: dict[str, JobState] = {
    "created": "pending",
    "pending": "pending",
    "waiting_for_resource": "pending",
    "preparing": "pending",
    "scheduled": "pending",
    "manual": "skipped",
    "waiting_for_callback": "pending",
    "running": "running",
    "canceling": "running",
    "success": "passed",
    "failed": "failed",
    "canceled": "cancelled",
    "skipped": "skipped",
}
RUNNER_CLEANUP = frozenset(
    {
        "after_script",
        "upload_artifacts_on_failure",
        "upload_artifacts_on_success",
        "archive_cache",
        "archive_cache_on_failure",
        "cleanup_file_variables",
        "cleanup_build_dir",
    }
)
MARKER = re.compile(
    r"section_(start|end):\d+:([A-Za-z0-9_.-]+)(?:\[[^\]\r\n]*\])?\r?(?:\x1b\[0?K)?"
)


async def read_ci_status(api: GitLabAPI, project: str, commit: str) -> CIStatus:
    """Every job of the newest pipeline on ``commit`` (a retried job once, its newest run),
    and the commit statuses that are not those jobs (external CI)."""
    pid = project_id(project)
    try:
        pipelines = await api.call(
            "GET",
            f"/projects/{pid}/pipelines",
            f"the pipelines of {project} on {commit[:12]}",
            params={"sha": commit, "order_by": "id", "sort": "desc"},
        )
    except ForgeAuthError:
        if await _runs_ci(api, project):
            raise
        return CIStatus(commit=commit, supported=False)
    ours = [p for p in pipelines or [] if p.get("source") != "external"] or pipelines or []
    pipeline = max(ours, key=lambda p: int(p["id"]), default=None)
    jobs: list[Any] = []
    if pipeline is not None:
        jobs = await api.paginate(
            f"/projects/{pid}/pipelines/{pipeline['id']}/jobs",
            f"the jobs of pipeline {pipeline['id']} of {project}",
        )
    statuses = await api.paginate(
        f"/projects/{pid}/repository/commits/{commit}/statuses",
        f"the commit statuses of {commit[:12]} in {project}",
    )
    newest = _newest_by_name(jobs)
    names, ids = {job["name"] for job in jobs}, {job["id"] for job in jobs}
    external = [
        status
        for status in _newest_by_name(statuses)
        if status["name"] not in names and status["id"] not in ids
    ]
    return CIStatus(
        commit=commit,
        jobs=[_job(job) for job in newest] + [_status(s) for s in external],
        required=None,
        url=pipeline.get("web_url") if pipeline else None,
    )


async def _runs_ci(api: GitLabAPI, project: str) -> bool:
    """Whether the project has CI/CD switched on (its pipelines answer 403 when not)."""
    data = await api.call("GET", f"/projects/{project_id(project)}", f"project {project}")
    return bool(data.get("jobs_enabled", True)) and data.get("builds_access_level") != "disabled"


async def read_job_failure(api: GitLabAPI, project: str, job: CIJob) -> CIJob:
    """``job`` with its failed step and log tail (a commit status has no log: as it is)."""
    if job.kind != "job":
        return job
    raw, complete = await api.tail(
        f"/projects/{project_id(project)}/jobs/{job.id}/trace",
        f"the log of job {job.name} ({job.id}) of {project}",
        limit=TRACE_BYTES,
    )
    text = raw.decode("utf-8", errors="replace")
    if len(raw) >= TRACE_BYTES:
        text = text.partition("\n")[2]  # the first line is cut
    if not complete:
        text = text.rpartition("\n")[0]  # and so is the last, where reading stopped
    step, tail = failed_section(text)
    if not complete:
        tail += f"\n(the log goes on: golem read its first {MAX_DOWNLOAD // 2**20} MiB)"
    return job.model_copy(update={"failed_steps": [step] if step else [], "log_tail": tail})


def failed_section(trace: str) -> tuple[str | None, str]:
    """The section a job failed in (None when the trace has none), and the end of its
    text and of what follows it outside any section, plain."""
    pieces, still_open = _pieces(trace)
    names = [name for name, _ in pieces if name]
    if still_open:
        failed: str | None = still_open[-1]
    else:
        failed = next((n for n in reversed(names) if n not in RUNNER_CLEANUP), None)
    if failed is None:
        kept = [text for _, text in pieces]
    else:
        start = next(i for i, (name, _) in enumerate(pieces) if name == failed)
        kept = [text for name, text in pieces[start:] if name in (failed, "")]
    return failed, _bounded(plain("".join(kept)))


def _pieces(trace: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The trace as (section, text) pieces, markers removed; and the sections left open."""
    pieces: list[tuple[str, str]] = []
    stack: list[str] = []
    position = 0
    for marker in MARKER.finditer(trace):
        pieces.append((stack[-1] if stack else "", trace[position : marker.start()]))
        kind, name = marker[1], marker[2]
        if kind == "start":
            stack.append(name)
        elif name in stack:
            del stack[stack.index(name) :]
        elif not stack:  # its start was cut off with the trace's beginning
            pieces = [(section or name, text) for section, text in pieces]
        position = marker.end()
    pieces.append((stack[-1] if stack else "", trace[position:]))
    return [piece for piece in pieces if piece[1]], stack


def _bounded(text: str) -> str:
    lines = text.strip("\n").splitlines()[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]


def _newest_by_name(entries: list[Any]) -> list[Any]:
    """One entry per name, the one with the highest id (a retried job's newest run), in
    the order the names first appear."""
    chosen: dict[str, Any] = {}
    for entry in entries:
        kept = chosen.get(entry["name"])
        if kept is None or int(entry["id"]) > int(kept["id"]):
            chosen[entry["name"]] = entry
    return list(chosen.values())


def _job(job: Any) -> CIJob:
    manual = job.get("status") == "manual"
    return CIJob(
        id=str(job["id"]),
        name=job["name"],
        kind="job",
        state=STATES.get(str(job.get("status")), "pending"),
        group=job.get("stage") or "",
        url=job.get("web_url"),
        allowed_to_fail=bool(job.get("allow_failure")),
        summary="manual: runs when a person starts it"
        if manual
        else job.get("failure_reason") or "",
    )


def _status(status: Any) -> CIJob:
    return CIJob(
        id=status["name"],
        name=status["name"],
        kind="status",
        state=STATES.get(str(status.get("status")), "pending"),
        group=status.get("stage") or "",
        url=status.get("target_url"),
        allowed_to_fail=bool(status.get("allow_failure")),
        summary=status.get("description") or "",
    )
