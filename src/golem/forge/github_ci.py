"""GitHub's verdict on a commit: its check runs and commit statuses, the checks its base
branch requires, and what failed in a job (failed steps and the end of its log).

GitHub Actions jobs are check runs of the ``github-actions`` app whose id is also the
job's: their steps come from ``/actions/jobs/{id}`` and their log from a pre-signed URL
the API redirects to (fetched without the token). Other apps' check runs tell what failed
through their output and annotations; a commit status through its description and link.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from golem.core.ansi import plain
from golem.core.errors import ForgeAuthError, ForgeError, ForgeNotFound, ForgeRequestRejected
from golem.forge.ci import CIJob, CIStatus, JobState
from golem.forge.github_api import GitHubAPI
from golem.forge.refs import split_repo
from golem.forge.rest import segment

__all__ = ["ci_failure", "ci_status", "clean_log", "log_excerpt"]

log = logging.getLogger(__name__)

ACTIONS_APP = "github-actions"
LOG_READ_BYTES = 64 * 1024
"""How much of a job log's end is downloaded (the error is near the end)."""
TAIL_CHARS = 6000
"""How much of it, and of a check's output, reaches the model."""

CONCLUSIONS: dict[str, JobState] = {
    "success": "passed",
    "failure": "failed",
    "timed_out": "failed",
    "action_required": "failed",
    "startup_failure": "failed",
    "cancelled": "cancelled",
    "stale": "cancelled",
    "skipped": "skipped",
    "neutral": "neutral",
}
STATUS_STATES: dict[str, JobState] = {
    "pending": "pending",
    "success": "passed",
    "failure": "failed",
    "error": "failed",
}
TIMESTAMP = re.compile(r"^\ufeff?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ", re.MULTILINE)


async def ci_status(api: GitHubAPI, repo: str, commit: str, base: str | None) -> CIStatus:
    """Every check run and commit status on ``commit``; with ``base``, what it requires."""
    owner, name = split_repo(repo)
    prefix = f"/repos/{owner}/{name}/commits/{commit}"
    try:
        runs = await api.paginate(
            f"{prefix}/check-runs",
            f"the check runs of {owner}/{name}@{commit[:12]}",
            {"filter": "latest"},
            key="check_runs",
        )
    except ForgeRequestRejected as exc:
        if "no commit found" not in exc.message.lower():
            raise
        log.info("%s/%s: GitHub does not know %s yet: nothing reported", owner, name, commit)
        return CIStatus(commit=commit)
    combined = await api.call(
        "GET",
        f"{prefix}/status",
        f"the commit statuses of {owner}/{name}@{commit[:12]}",
        params={"per_page": 100},
    )
    jobs = [_check_job(run) for run in _latest_runs(runs)]
    jobs += [_status_job(status) for status in _latest_statuses(combined.get("statuses") or [])]
    required = await _required(api, f"{owner}/{name}", base) if base is not None else None
    return CIStatus(commit=commit, jobs=jobs, required=required)


async def ci_failure(api: GitHubAPI, repo: str, job: CIJob) -> CIJob:
    """``job`` with its failed steps and the relevant end of its log (or output)."""
    owner, name = split_repo(repo)
    if job.kind == "status":
        note = f"{job.summary}\nDetails: {job.url}" if job.url else job.summary
        return job.model_copy(update={"log_tail": note.strip()})
    try:
        run = await api.call(
            "GET", f"/repos/{owner}/{name}/check-runs/{job.id}", f"check run {job.name!r}"
        )
        if (run.get("app") or {}).get("slug") == ACTIONS_APP:
            steps, tail = await _actions_failure(api, f"{owner}/{name}", job)
        else:
            steps, tail = [], await _check_output(api, f"{owner}/{name}", run)
    except (ForgeNotFound, ForgeAuthError) as exc:
        # A token without "actions: read" still lets the round go on, with what it knows.
        note = f"(what failed in it could not be read: {exc})"
        return job.model_copy(update={"log_tail": f"{job.summary}\n{note}".strip()})
    return job.model_copy(update={"failed_steps": steps, "log_tail": tail})


def clean_log(text: str) -> str:
    """An Actions log as a person reads it: no timestamps, ANSI codes or group markers."""
    text = plain(TIMESTAMP.sub("", text.replace("\r\n", "\n")))
    lines = [line for line in text.split("\n") if not line.startswith("##[endgroup]")]
    return "\n".join(line.removeprefix("##[group]") for line in lines)


def log_excerpt(text: str, limit: int = TAIL_CHARS) -> str:
    """The part of a cleaned job log that tells why it failed: from the start of the step
    that printed the first ``##[error]`` (or ``limit`` before its last one) to the end of
    that last error line; the log's end where there is none."""
    errors = [m.start() for m in re.finditer(r"^##\[error\]", text, re.MULTILINE)]
    if not errors:
        return text[-limit:]
    line_end = text.find("\n", errors[-1])
    end = len(text) if line_end < 0 else line_end
    step = text.rfind("\nRun ", 0, errors[0])
    start = max(step + 1, end - limit)
    return text[start:end]


def _check_job(run: dict[str, Any]) -> CIJob:
    output = run.get("output") or {}
    return CIJob(
        id=str(run["id"]),
        name=run.get("name") or "",
        kind="check",
        state=_check_state(run.get("status"), run.get("conclusion")),
        group=(run.get("app") or {}).get("slug") or "",
        url=run.get("html_url") or run.get("details_url"),
        summary=output.get("title") or "",
    )


def _check_state(status: str | None, conclusion: str | None) -> JobState:
    if status == "in_progress":
        return "running"
    if status != "completed":
        return "pending"  # queued, waiting, requested, pending
    return CONCLUSIONS.get(conclusion or "", "failed")


def _status_job(status: dict[str, Any]) -> CIJob:
    return CIJob(
        id=status["context"],
        name=status["context"],
        kind="status",
        state=STATUS_STATES.get(status.get("state") or "", "failed"),
        url=status.get("target_url"),
        summary=status.get("description") or "",
    )


def _latest_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One check run per suite and name: the newest (re-running a job adds one to its
    suite; two workflows' jobs of the same name are two suites)."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: int(r["id"])):
        suite = str((run.get("check_suite") or {}).get("id") or "")
        newest[(suite, run.get("name") or "")] = run
    return list(newest.values())


def _latest_statuses(statuses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One status per context: the newest."""
    newest: dict[str, dict[str, Any]] = {}
    for status in sorted(statuses, key=lambda s: (s.get("updated_at") or "", int(s["id"]))):
        newest[status["context"]] = status
    return list(newest.values())


async def _required(api: GitHubAPI, repo: str, base: str) -> list[str] | None:
    """The checks ``base`` requires, by its branch protection and by rulesets; None where
    GitHub says none (or does not say: no such branch, or a token that may not read it)."""
    names = await _protected_contexts(api, repo, base) + await _ruleset_contexts(api, repo, base)
    return list(dict.fromkeys(names)) or None


async def _protected_contexts(api: GitHubAPI, repo: str, base: str) -> list[str]:
    try:
        branch = await api.call(
            "GET", f"/repos/{repo}/branches/{segment(base, slashes=True)}", f"branch {base}"
        )
    except (ForgeNotFound, ForgeAuthError) as exc:
        log.info("%s: the checks %s's protection requires are unknown: %s", repo, base, exc)
        return []
    checks = ((branch.get("protection") or {}).get("required_status_checks")) or {}
    if not branch.get("protected"):
        return []
    return [*(checks.get("contexts") or []), *(c["context"] for c in checks.get("checks") or [])]


async def _ruleset_contexts(api: GitHubAPI, repo: str, base: str) -> list[str]:
    try:
        rules = await api.paginate(
            f"/repos/{repo}/rules/branches/{segment(base, slashes=True)}", f"the rules of {base}"
        )
    except (ForgeNotFound, ForgeAuthError) as exc:  # servers before rulesets answer 404
        log.info("%s: the checks %s's rulesets require are unknown: %s", repo, base, exc)
        return []
    return [
        check["context"]
        for rule in rules
        if rule.get("type") == "required_status_checks"
        for check in (rule.get("parameters") or {}).get("required_status_checks") or []
    ]


async def _actions_failure(api: GitHubAPI, repo: str, job: CIJob) -> tuple[list[str], str]:
    data = await api.call("GET", f"/repos/{repo}/actions/jobs/{job.id}", f"job {job.name!r}")
    failed = [
        step.get("name") or f"step {step.get('number')}"
        for step in data.get("steps") or []
        if step.get("conclusion") in ("failure", "timed_out", "cancelled")
    ]
    what = f"the log of job {job.name!r}"
    try:
        download = await api.download_tail(
            f"/repos/{repo}/actions/jobs/{job.id}/logs", what, limit=LOG_READ_BYTES
        )
    except ForgeError as exc:
        return failed, f"(its log could not be read: {exc})"
    text = download.tail.decode("utf-8", errors="replace")
    if len(download.tail) == LOG_READ_BYTES:
        text = text.partition("\n")[2]  # the first line is cut
    if not download.complete:
        text = text.rpartition("\n")[0]  # and so is the last
    excerpt = log_excerpt(clean_log(text))
    if not download.complete:
        excerpt = f"(the log is longer than golem reads; it stopped here)\n{excerpt}"
    return failed, excerpt


async def _check_output(api: GitHubAPI, repo: str, run: dict[str, Any]) -> str:
    output = run.get("output") or {}
    parts = [output.get(k) or "" for k in ("title", "summary", "text")]
    if (output.get("annotations_count") or 0) > 0:
        annotations = await api.paginate(
            f"/repos/{repo}/check-runs/{run['id']}/annotations",
            f"the annotations of check run {run.get('name')!r}",
        )
        parts += [
            f"{a.get('path')}:{a.get('start_line')}: {a.get('message')}"
            for a in annotations
            if a.get("annotation_level") == "failure"
        ]
    text = plain("\n".join(p for p in parts if p))
    return text[:TAIL_CHARS]
