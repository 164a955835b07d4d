"""A forge's verdict on a pushed commit: its CI jobs (GitHub check runs and commit statuses,
GitLab pipeline jobs and commit statuses), each with what failed in it when asked.

A forge reports what it sees (``CIStatus``); what that means for a run (still waiting,
passed, failed, a required check never created) is the CI step's to judge
(``golem.blueprint.steps.ci``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["FINISHED_JOB_STATES", "CIJob", "CIStatus", "JobState"]

JobState = Literal["pending", "running", "passed", "failed", "cancelled", "skipped", "neutral"]
"""One job as golem reads it: ``pending`` (queued, waiting, created, manual), ``running``,
``passed``, ``failed`` (failure, error, timed out, action required), ``cancelled``,
``skipped``, ``neutral`` (GitHub's neutral: ended, judged neither way)."""
FINISHED_JOB_STATES: frozenset[str] = frozenset(
    {"passed", "failed", "cancelled", "skipped", "neutral"}
)


class CIJob(BaseModel):
    """One CI job on a commit: a GitHub check run or commit status, a GitLab job or
    external commit status."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        description="The forge's id for it: a check run's or job's number, or a status's context."
    )
    name: str = Field(description="As the forge shows it (a GitLab job's stage is ``group``).")
    kind: Literal["check", "status", "job"] = Field(
        description="GitHub check run, commit status (both forges), GitLab pipeline job."
    )
    state: JobState
    group: str = Field("", description="The workflow (GitHub app/suite) or stage (GitLab).")
    url: str | None = Field(None, description="Where a person reads it.")
    allowed_to_fail: bool = Field(
        False, description="GitLab's allow_failure: its failure fails nothing."
    )
    summary: str = Field(
        "",
        description="The forge's one line about it (description, "
        "failure_reason, the check's output title).",
    )
    failed_steps: list[str] = Field(
        default_factory=list,
        description="The steps (GitHub Actions) or log sections "
        "(GitLab) that failed; filled by ``Forge.ci_failure``.",
    )
    log_tail: str = Field(
        "",
        description="The relevant end of its log (or its annotations), ANSI codes "
        "removed, bounded; filled by ``Forge.ci_failure``. Not yet masked: the caller masks.",
    )


class CIStatus(BaseModel):
    """Every CI job a forge reports on one commit."""

    model_config = ConfigDict(extra="forbid")

    commit: str
    supported: bool = Field(
        True, description="False where the forge has no CI at all (the local forge)."
    )
    jobs: list[CIJob] = Field(default_factory=list)
    required: list[str] | None = Field(
        None,
        description="The check names the base branch requires (GitHub branch protection), "
        "when the forge says; None when it does not or cannot.",
    )
    url: str | None = Field(None, description="The pipeline's page (GitLab), if any.")
