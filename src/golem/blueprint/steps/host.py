"""Host steps: prepare the checkout, gather context, ship or escalate. Git and the forge run
on the host with the host's credentials; nothing here runs in a box."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.lifecycle import mark_concluded
from golem.blueprint.model import HostAction, HostNode
from golem.blueprint.steps import follow_up, pr_text
from golem.blueprint.steps.handoff import hand_off
from golem.blueprint.steps.install import run_install
from golem.blueprint.steps.keep_prepared import keep_prepared
from golem.blueprint.steps.publish import TRAILER, commit_change, push_change, refuse_secrets
from golem.checks import load_conventions
from golem.context import hydrate, render_issue
from golem.core.errors import ForgeError, PullRequestExists
from golem.forge import PullRequest, PullRequestDraft, markdown

__all__ = ["HOST_ACTIONS", "refuse_secrets"]

CONTEXT_BUDGET = 12_000


NO_VERIFYING_CHECK = (
    "this blueprint ran no check that verified the change (no verify loop concluded with "
    "passing checks); add a loop over the repository's checks before ship"
)
Result = tuple[Literal["success", "failure"], str]


HostStep = Callable[[Execution, HostNode], Awaitable[Result]]


HOST_ACTIONS: Mapping[HostAction, HostStep] = {
    "prepare": lambda ex, node: _prepare(ex),
    "hydrate": lambda ex, node: _hydrate(ex, node.id),
    "install": lambda ex, node: run_install(ex, node.id),
    "keep-prepared": lambda ex, node: keep_prepared(ex, node.id),
    "ship": lambda ex, node: _ship(ex, escalate=False),
    "escalate": lambda ex, node: _ship(ex, escalate=True),
    "checkout_pull_request": lambda ex, node: follow_up.prepare_follow_up(ex),
    "read_review": lambda ex, node: follow_up.hydrate_follow_up(ex, node.id, CONTEXT_BUDGET),
    "answer_review": lambda ex, node: follow_up.ship_follow_up(ex, escalate=False),
    "escalate_review": lambda ex, node: follow_up.ship_follow_up(ex, escalate=True),
}
"""The step of each host action; a follow-up run's own (``steps/follow_up``) are the
ones about a review."""


def _slug(text: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return words[:40].rstrip("-") or "task"


async def _prepare(ex: Execution) -> Result:
    """Clone (or reuse) the checkout, read the task or issue, make the branch."""
    state = ex.state
    request = state.request
    if request.issue:
        issue = await ex.forge.fetch_issue(request.issue)
        state.title = issue.title
        state.task_text = render_issue(issue)
        state.issue = issue
    else:
        assert request.task is not None
        state.title = request.task.strip().splitlines()[0][:120]
        state.task_text = request.task.strip()
    workspace = ex.workspace
    repo = ex.repo()
    if not (workspace / ".git").exists():  # a resumed run keeps its checkout
        workspace.parent.mkdir(parents=True, exist_ok=True)
        await repo.clone_from(request.repo)
    state.base = state.base or request.base or await repo.default_branch()
    state.branch = state.branch or f"golem/{_slug(state.title)}-{state.id[-6:]}"
    await repo.checkout_branch(state.branch, start=state.base)
    if state.conventions is None:  # a resumed run keeps the base's, never the box's edit
        state.conventions = await asyncio.to_thread(load_conventions, workspace)
    ex.note(f"checks: {state.conventions.source}", "prepare")
    ex.save()
    return "success", f"{state.branch} from {state.base}"


async def _hydrate(ex: Execution, node: str) -> Result:
    """Gather the rule files, the issue, the files it names and a repo map (file reads and
    git on a whole tree: in a thread, off the event loop)."""
    state = ex.state
    context = await asyncio.to_thread(
        hydrate,
        ex.workspace,
        ex.workspace,
        task=state.task_text,
        issue=state.issue,
        budget_tokens=CONTEXT_BUDGET,
    )
    state.context = context.render()
    state.context_tokens = context.tokens
    kinds = ", ".join(f"{s.kind}:{s.title}" for s in context.sections) or "nothing"
    dropped = f"; left out: {', '.join(context.dropped)}" if context.dropped else ""
    ex.note(f"context: {context.tokens} tokens ({kinds}){dropped}", node)
    ex.save()
    return "success", f"{context.tokens} tokens"


async def _ship(ex: Execution, *, escalate: bool) -> Result:
    """Commit, push and open the pull request (marked for a human when escalating). Each
    part is done once: a resumed run finds its commit by its trailer and its PR in state."""
    state = ex.state
    repo = ex.repo()
    if state.pr is not None:
        return await hand_off(ex) if escalate else ("success", state.pr.url)
    message = pr_text.commit_message(state, escalate=escalate)
    state.commit = await commit_change(ex, message, {TRAILER: state.id}, since=state.base)
    ex.save()
    if state.commit is None:
        if escalate:
            mark_concluded(state, "escalated")
            if state.error:
                why = f":\n\n{markdown.block(state.error)}"
            else:
                why = ": the agent changed nothing."
            await _comment(ex, f"golem could not make a change for this issue{why}")
            return "success", "nothing to push"
        return "failure", "the agent changed nothing: nothing to ship"
    state.diff_stat = (await repo.diff_stat(state.base)).summary()
    diff = await repo.diff(state.base)
    await push_change(ex, since=state.base)
    if not escalate and not state.verified and state.unverified is None:
        state.unverified = NO_VERIFYING_CHECK
    unverified = not escalate and state.unverified is not None
    draft = PullRequestDraft(
        repo=_repo_name(ex),
        base=state.base,
        head=state.branch,
        title=ex.secrets.mask(pr_text.title(state, escalate=escalate)),
        body=ex.secrets.mask(pr_text.body(state, escalate=escalate)),
        draft=escalate or unverified,
        labels=_labels(ex, escalate=escalate, unverified=unverified),
        issue=state.issue.number if state.issue is not None else None,
    )
    state.pr = await _open_pull_request(ex, draft, diff)
    if escalate or unverified:
        mark_concluded(state, "escalated" if escalate else "unverified")
    ex.save()
    why = " for a human to finish" if escalate else ""
    if unverified:
        why = f" as a draft: no check verified it ({state.unverified})"
    await _comment(ex, f"golem opened {state.pr.url}{why}")
    return "success", state.pr.url


def _labels(ex: Execution, *, escalate: bool, unverified: bool) -> list[str]:
    if escalate:
        return list(ex.config.forge.escalation_labels)
    return list(ex.config.forge.unverified_labels) if unverified else []


async def _open_pull_request(ex: Execution, draft: PullRequestDraft, diff: str) -> PullRequest:
    """Open the run's pull request; one already open for the run's own branch is the one
    this run opened before its runner died (the PR was open, the state not yet saved)."""
    try:
        return await ex.forge.open_pull_request(draft, diff=diff, checks=ex.state.checks)
    except PullRequestExists:
        existing = await ex.forge.find_pull_request(draft.repo, draft.head)
        if existing is None:
            raise
        ex.note(f"the pull request for {draft.head} was open already: {existing.url}")
        return existing


async def _comment(ex: Execution, text: str) -> None:
    """Comment on the run's issue; a comment that fails is noted, never the run's end."""
    if ex.state.issue is not None:
        try:
            await ex.forge.comment(ex.state.issue, ex.secrets.mask(text))
        except ForgeError as exc:
            ex.note(f"could not comment on the issue: {exc.message}")


def _repo_name(ex: Execution) -> str:
    issue = ex.state.issue
    if issue is not None and issue.repo:
        return issue.repo
    return ex.state.request.repo
