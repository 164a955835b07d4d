"""Forge events that fire automations, read from the forges' webhook deliveries (which
golem serve verifies first): a GitHub Actions run that completed with a failure, a GitLab
pipeline that failed, a push (GitHub's ``push``, GitLab's Push Hook), each on its
repository's default branch. Every automation watching
that repository for that event fires once per delivery."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from golem.core.automation_config import AutomationEvent
from golem.service.automations.firing import FireAnswer, Firings, common_fields
from golem.service.trigger import Ignored, TriggerAnswer

__all__ = [
    "EventCall",
    "fire_event",
    "github_failure",
    "github_push",
    "gitlab_failure",
    "gitlab_push",
]

EventCall = tuple[AutomationEvent, str, dict[str, str]]
"""An event, its repository, and its template's fields."""
STATUS: dict[str, Literal["started", "duplicate", "running"]] = {
    "started": "started",
    "duplicate": "duplicate",
    "skipped": "running",
}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return "" if value is None or isinstance(value, (dict, list)) else str(value)


def github_failure(payload: Mapping[str, Any]) -> EventCall | Ignored:
    """A ``workflow_run`` delivery: a failed run on the default branch of the repository
    itself (a fork's pull request from its own branch of that name is a stranger's), or
    why not."""
    run = _mapping(payload.get("workflow_run"))
    repository = _mapping(payload.get("repository"))
    repo, default = _text(repository.get("full_name")), _text(repository.get("default_branch"))
    branch = _text(run.get("head_branch"))
    if payload.get("action") != "completed" or run.get("conclusion") != "failure":
        why = f"{payload.get('action')}/{run.get('conclusion')}"
        return Ignored(f"workflow_run {why} fires no automation (only completed with failure)")
    if not default or branch != default:
        return Ignored(f"{repo}: the failed run is on {branch!r}, not the default branch")
    head = _text(_mapping(run.get("head_repository")).get("full_name"))
    if head.casefold() != repo.casefold():  # a fork's branch of the same name: not ours
        return Ignored(f"{repo}: the failed run is of {head or 'no repository'}'s {branch!r}, "
                       "not the repository's own default branch")  # fmt: skip
    fields = {
        "repo": repo,
        "branch": branch,
        "sha": _text(run.get("head_sha")),
        "url": _text(run.get("html_url")),
        "workflow": _text(run.get("name")),
        "conclusion": _text(run.get("conclusion")),
        "run_id": _text(run.get("id")),
    }
    return "github.workflow_run.failed", repo, fields


def gitlab_failure(payload: Mapping[str, Any]) -> EventCall | Ignored:
    """A ``Pipeline Hook`` delivery: a failed pipeline on the default branch, or why not."""
    pipeline = _mapping(payload.get("object_attributes"))
    project = _mapping(payload.get("project"))
    repo = _text(project.get("path_with_namespace"))
    branch, default = _text(pipeline.get("ref")), _text(project.get("default_branch"))
    if pipeline.get("status") != "failed":
        return Ignored(f"a {pipeline.get('status')} pipeline fires no automation (only failed)")
    if pipeline.get("tag") or not default or branch != default:
        return Ignored(f"{repo}: the failed pipeline is on {branch!r}, not the default branch")
    number = _text(pipeline.get("id"))
    fields = {
        "repo": repo,
        "branch": branch,
        "sha": _text(pipeline.get("sha")),
        "url": f"{_text(project.get('web_url'))}/-/pipelines/{number}",
        "pipeline_id": number,
        "status": "failed",
    }
    return "gitlab.pipeline.failed", repo, fields


def github_push(payload: Mapping[str, Any]) -> EventCall | Ignored:
    """A ``push`` delivery: new commits on the default branch, or why not (another ref, a
    deleted branch)."""
    repository = _mapping(payload.get("repository"))
    repo, default = _text(repository.get("full_name")), _text(repository.get("default_branch"))
    ref = _text(payload.get("ref"))
    if not default:
        return Ignored(f"{repo}: the push names no default branch")
    if ref != f"refs/heads/{default}":
        return Ignored(f"{repo}: the push is to {ref!r}, not the default branch")
    if payload.get("deleted") or not _text(payload.get("after")).strip("0"):
        return Ignored(f"{repo}: the push deleted {ref!r}")
    fields = {
        "repo": repo,
        "branch": default,
        "sha": _text(payload.get("after")),
        "before": _text(payload.get("before")),
        "url": _text(payload.get("compare")),
        "pusher": _text(_mapping(payload.get("pusher")).get("name")),
    }
    return "github.push", repo, fields


def gitlab_push(payload: Mapping[str, Any]) -> EventCall | Ignored:
    """A ``Push Hook`` delivery: new commits on the default branch, or why not."""
    project = _mapping(payload.get("project"))
    repo = _text(project.get("path_with_namespace"))
    default, ref = _text(project.get("default_branch")), _text(payload.get("ref"))
    if not default:
        return Ignored(f"{repo}: the push names no default branch")
    if ref != f"refs/heads/{default}":
        return Ignored(f"{repo}: the push is to {ref!r}, not the default branch")
    if not _text(payload.get("checkout_sha")):
        return Ignored(f"{repo}: the push deleted {ref!r}")
    after = _text(payload.get("after"))
    fields = {
        "repo": repo,
        "branch": default,
        "sha": after,
        "before": _text(payload.get("before")),
        "url": f"{_text(project.get('web_url'))}/-/commit/{after}",
        "pusher": _text(payload.get("user_username")),
    }
    return "gitlab.push", repo, fields


async def fire_event(firings: Firings, call: EventCall, delivery: str) -> TriggerAnswer:
    """Fire every automation that watches ``call``'s repository for its event, once for
    ``delivery``; the answer the forge gets."""
    event, repo, fields = call
    answers: list[tuple[str, FireAnswer]] = []
    for kept in await firings.shelf.all():
        definition = kept.model.definition
        if definition.event != event or (definition.watch or "").casefold() != repo.casefold():
            continue
        given = {**common_fields(definition.name, definition.timezone, time.time()), **fields}
        answers.append(
            (definition.name, await firings.fire(definition.name, delivery, given, "event"))
        )
    if not answers:
        return TriggerAnswer(status="ignored", reason=f"no automation watches {repo} for {event}")
    said = "; ".join(f"{name}: {answer.reason}" for name, answer in answers)
    first = next((a for _, a in answers if a.run_id is not None), answers[0][1])
    status = STATUS.get(first.status, "ignored")
    return TriggerAnswer(status=status, reason=said, run_id=first.run_id)
