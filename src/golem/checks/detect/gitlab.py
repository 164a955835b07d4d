"""GitLab CI: the ``before_script`` and ``script`` lines of ``.gitlab-ci.yml``'s jobs,
except hidden templates and jobs of deploy and release stages."""

from __future__ import annotations

from typing import Any

from golem.checks.detect.ci import SKIPPED_NAMES, JobLines, job_of, read_lines
from golem.checks.detect.found import RepoFiles
from golem.checks.detect.python import PythonFacts
from golem.checks.detect.services import gitlab_services

__all__ = ["GITLAB_CI", "read_gitlab"]

GITLAB_CI = ".gitlab-ci.yml"
NOT_JOBS = frozenset(
    {
        "stages",
        "variables",
        "default",
        "include",
        "workflow",
        "image",
        "services",
        "before_script",
        "after_script",
        "cache",
        "pages",
    }
)


def read_gitlab(files: RepoFiles, facts: PythonFacts) -> JobLines:
    """Candidates from ``.gitlab-ci.yml`` (nothing when it is absent or not a mapping)."""
    found = JobLines()
    pipeline = files.yaml(GITLAB_CI)
    if not isinstance(pipeline, dict):
        return found
    env = _variables(pipeline.get("variables"), {})
    default = pipeline.get("default")
    before = _lines(pipeline.get("before_script"))
    services = pipeline.get("services")
    if isinstance(default, dict):
        before = _lines(default.get("before_script")) or before
        services = default.get("services", services)
    for name, job in pipeline.items():
        if not _is_check_job(str(name), job):
            continue
        job_env = _variables(job.get("variables"), env)
        job_before = _lines(job["before_script"]) if "before_script" in job else before
        declared = gitlab_services(job.get("services", services), str(name))
        if declared:  # a job's own services replace the pipeline's
            found.services[job_of(GITLAB_CI, f"job {name}")] = declared
        for part, lines in (("before_script", job_before), ("script", _lines(job.get("script")))):
            for number, line in enumerate(lines, start=1):
                where = f"job {name}, {part} {number}"
                read_lines(
                    line,
                    origin=GITLAB_CI,
                    where=where,
                    workdir="",
                    env=job_env,
                    facts=facts,
                    found=found,
                )
    return found


def _is_check_job(name: str, job: Any) -> bool:
    if name in NOT_JOBS or name.startswith(".") or not isinstance(job, dict):
        return False
    if "script" not in job or "trigger" in job:
        return False
    return not SKIPPED_NAMES.search(name) and not SKIPPED_NAMES.search(str(job.get("stage", "")))


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(item) for item in value if isinstance(item, str)]
    return []


def _variables(value: Any, outer: dict[str, str]) -> dict[str, str]:
    env = dict(outer)
    for key, item in value.items() if isinstance(value, dict) else ():
        literal = item.get("value") if isinstance(item, dict) else item
        if isinstance(literal, str | int | float):
            env[str(key)] = str(literal)
    return env
