"""A run's change as a unified diff, for the dashboard: the pull request's (the local forge
keeps it), else the run's own commit in its host checkout (forges that keep no diff)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from golem.blueprint import RunState
from golem.blueprint.book import RunBook
from golem.core.errors import GitError, Problem
from golem.forge import GitRepo
from golem.service.api.deps import Caller, State

__all__ = ["MAX_DIFF_CHARS", "RunDiff", "router"]

router = APIRouter(prefix="/v1", tags=["runs"])
MAX_DIFF_CHARS = 2_000_000
GIT_TIMEOUT = 30.0


class RunDiff(BaseModel):
    """What a run changed, and where that was read."""

    source: Literal["pull_request", "commit", "none"] = Field(
        description="The pull request's diff, the run's commit in its checkout, or nothing."
    )
    diff: str = Field("", description="A unified diff (cut at MAX_DIFF_CHARS).")
    stat: str = Field("", description="The run's diff stat, when it shipped.")
    truncated: bool = False
    note: str = Field("", description="Why there is no diff, for a person.")


@router.get("/runs/{run_id}/diff")
async def run_diff(run_id: str, principal: Caller, state: State) -> RunDiff:
    """The run's change: the pull request's diff, else its commit's (``base...HEAD``);
    nothing before the run commits (a run commits when it ships or escalates)."""
    run = await RunBook(state.store.for_tenant(principal.tenant)).load(run_id)
    if run is None:
        raise Problem(404, f"no run {run_id!r}")
    if run.pr is not None and run.pr.diff:
        return _cut(RunDiff(source="pull_request", diff=run.pr.diff, stat=run.diff_stat))
    if run.commit is None:
        return RunDiff(source="none", note=_why_none(run))
    workspace = Path(run.workspace)
    if not run.workspace or not run.base or not (workspace / ".git").is_dir():
        return RunDiff(source="none", note="the run's checkout is gone from the server")
    try:
        text = await GitRepo(workspace, timeout=GIT_TIMEOUT).diff(run.base)
    except GitError as exc:
        return RunDiff(source="none", note=f"git could not show the change: {exc}")
    return _cut(RunDiff(source="commit", diff=text, stat=run.diff_stat))


def _why_none(run: RunState) -> str:
    if run.finished:
        return "the run committed nothing"
    return "nothing is committed yet: the run commits its change when it ships"


def _cut(found: RunDiff) -> RunDiff:
    if len(found.diff) <= MAX_DIFF_CHARS:
        return found
    return found.model_copy(update={"diff": found.diff[:MAX_DIFF_CHARS], "truncated": True})
