"""A follow-up run's host steps: it works on the branch of a pull request golem opened,
reads its whole review as its task, and ships by pushing new commits to that branch (never
forced), replying on the threads it addressed and asking the reviewers to look again."""

from __future__ import annotations

import asyncio
from typing import Literal

from golem.agent import ReplyTool
from golem.blueprint.execution import Execution
from golem.blueprint.state import FollowUp, ThreadReply
from golem.blueprint.steps import pr_text
from golem.blueprint.steps.handoff import hand_off
from golem.blueprint.steps.publish import TRAILER, commit_change, push_change
from golem.checks import load_conventions
from golem.context import hydrate
from golem.context.review import ReviewAsk, render_review
from golem.core.errors import ForgeError, GitError, GitPushRejected, InvalidRequest
from golem.forge import PullRequest
from golem.forge.reviews import ReviewDiscussion

__all__ = ["hydrate_follow_up", "prepare_follow_up", "reply_tool", "ship_follow_up"]

REVIEW_BUDGET = 8_000
"""Estimated tokens of the review the task gets (the repository's context has its own)."""

Result = tuple[Literal["success", "failure"], str]


def _follow_up(ex: Execution) -> FollowUp:
    follow = ex.state.request.follow_up
    assert follow is not None, "a follow-up step in a run that is no follow-up"
    return follow


async def _open_pull_request(ex: Execution) -> PullRequest:
    """The pull request to follow up, refused (``InvalidRequest``) when golem cannot push
    to its branch: a fork's, or one no longer open."""
    follow = _follow_up(ex)
    pr = await ex.forge.fetch_pull_request(follow.repo, follow.number)
    if pr.fork:
        raise InvalidRequest(
            f"{pr.url} comes from a fork: golem cannot push to its branch {pr.head}; ask "
            "its author to make the change, or open a new run on this repository"
        )
    still_open = await ex.forge.find_pull_request(pr.repo, pr.head)
    if still_open is None or still_open.number != pr.number:
        raise InvalidRequest(
            f"{pr.url} is closed or merged: golem follows up only an open pull request; "
            "reopen it, or start a new run for what is left to do"
        )
    return pr


async def prepare_follow_up(ex: Execution) -> Result:
    """Clone (or reuse) the checkout and check out the pull request's branch as it is on
    the remote, its base beside it."""
    state = ex.state
    pr = await _open_pull_request(ex)
    follow = _follow_up(ex)
    if follow.parent_run is None:  # golem's pull requests name the run that opened them
        marked = pr_text.marked_run(pr.body)
        if marked is not None and await ex.book.load(marked) is not None:
            follow.parent_run = marked
    state.title = f"Follow-up on {pr.title}"[:160]
    state.task_text = follow.request.strip() or f"Answer the review of {pr.url}"
    repo = ex.repo()
    if not (ex.workspace / ".git").exists():  # a resumed run keeps its checkout
        ex.workspace.parent.mkdir(parents=True, exist_ok=True)
        await repo.clone_from(state.request.repo)
    state.base, state.branch = pr.base, pr.head
    if state.commit is None:  # before ship committed: start from the branch as pushed
        try:
            await repo.checkout_branch(pr.base, start=f"origin/{pr.base}")
            await repo.checkout_branch(pr.head, start=f"origin/{pr.head}")
        except GitError as exc:
            raise InvalidRequest(
                f"the branches of {pr.url} ({pr.head} into {pr.base}) are not both on "
                f"{state.request.repo}: {exc.message}; is --repo the pull request's repository?"
            ) from exc
    if state.conventions is None:
        state.conventions = await asyncio.to_thread(load_conventions, ex.workspace)
    ex.note(f"follow-up on {pr.url}; checks: {state.conventions.source}", "prepare")
    ex.save()
    return "success", f"{pr.head} of {pr.url}"


async def hydrate_follow_up(ex: Execution, node: str, budget_tokens: int) -> Result:
    """The task: what was asked and the whole review (masked, bounded), the pull request's
    diff and the earlier run's summary; then the repository's context, as for any run."""
    state = ex.state
    follow = _follow_up(ex)
    pr = await ex.forge.fetch_pull_request(follow.repo, follow.number)
    discussion = await ex.forge.review_discussion(pr)
    diff = await ex.repo().diff(state.base)
    review = render_review(
        pr,
        discussion,
        ask=ReviewAsk(follow.request, follow.requested_by, follow.thread),
        diff=diff,
        parent_summary=await _parent_summary(ex, follow),
        budget_tokens=REVIEW_BUDGET,
    )
    state.task_text = ex.secrets.mask(review.text)
    context = await asyncio.to_thread(
        hydrate, ex.workspace, ex.workspace, task=state.task_text, budget_tokens=budget_tokens
    )
    state.context = context.render()
    state.context_tokens = context.tokens
    dropped = [*review.dropped, *context.dropped]
    left_out = f"; left out: {', '.join(dropped)}" if dropped else ""
    threads = sum(1 for t in discussion.threads if not t.resolved)
    ex.note(
        f"review: {review.tokens} tokens ({threads} open thread(s)); context: "
        f"{context.tokens} tokens{left_out}",
        node,
    )
    ex.save()
    return "success", f"{review.tokens + context.tokens} tokens"


async def _parent_summary(ex: Execution, follow: FollowUp) -> str:
    """What the run that opened the pull request said, when it is this tenant's run."""
    if follow.parent_run is None:
        return ""
    parent = await ex.book.load(follow.parent_run)
    if parent is None:
        return ""
    return f"{parent.title}\n\n{parent.summary}".strip()


async def reply_tool(ex: Execution) -> ReplyTool:
    """The ``reply`` tool of a follow-up's agent steps: it records each reply in the run's
    state, for ship to post. They are kept with the step's other results when the state is
    next saved: a step run again after a crash records its replies afresh, and a reply
    recorded already is not recorded twice."""
    follow = _follow_up(ex)
    try:
        pr = await ex.forge.fetch_pull_request(follow.repo, follow.number)
        threads = [thread.id for thread in (await ex.forge.review_discussion(pr)).threads]
    except ForgeError as exc:  # the agent can still answer on the conversation
        ex.note(f"reply: the review threads could not be read: {exc.message}")
        threads = []

    def record(thread: str | None, body: str) -> None:
        reply = ThreadReply(thread=thread, body=ex.secrets.mask(body))
        if reply not in ex.state.replies:
            ex.state.replies.append(reply)

    return ReplyTool(threads, record)


async def ship_follow_up(ex: Execution, *, escalate: bool) -> Result:
    """Commit on the pull request's branch, push it (fast-forward only), post the replies,
    ask the reviewers again and say what was pushed. Escalating, push what there is (unless
    ship did), then hand the pull request to a person. Each part is done once: a resumed
    run finds its commit by its trailer and posts only the replies not yet posted."""
    state = ex.state
    if escalate and state.pr is not None:  # shipped; its CI stayed red
        return await hand_off(ex)
    pushed = await _commit_and_push(ex)
    if state.pr is None:
        follow = _follow_up(ex)
        state.pr = await ex.forge.find_pull_request(
            follow.repo, state.branch
        ) or await ex.forge.fetch_pull_request(follow.repo, follow.number)
        ex.save()
    pr = state.pr
    discussion = await ex.forge.review_discussion(pr)
    await _post_replies(ex, pr, discussion)
    reviewers = _reviewers_to_ask(ex, discussion)
    if reviewers and not escalate:
        await ex.quietly(ex.forge.request_review(pr, reviewers), "re-request review")
    what = ex.secrets.mask(state.summary or "no summary")
    if pushed:
        text = f"golem pushed {pushed[:12]}: {what}"
    else:
        text = f"golem changed nothing on {state.branch}: {what}"
    await ex.quietly(ex.forge.comment(pr.as_issue(), ex.secrets.mask(text)), "comment")
    ex.save()
    if escalate:
        return await hand_off(ex)
    return "success", f"{pushed[:12] if pushed else 'nothing pushed'} on {pr.url}"


async def _commit_and_push(ex: Execution) -> str | None:
    """The run's commit on the branch, pushed (None: the agent changed nothing)."""
    state = ex.state
    message = f"Follow-up on the review: {state.summary or state.title}".strip()
    state.commit = await commit_change(ex, message, {TRAILER: state.id}, since=state.base)
    ex.save()
    if state.commit is None:
        return None
    since = f"origin/{state.branch}"  # the branch as prepare found it (or as last pushed)
    state.diff_stat = (await ex.repo().diff_stat(since)).summary() or state.diff_stat
    try:
        await push_change(ex, since=since)
    except GitPushRejected as exc:
        raise GitPushRejected(
            f"the remote refused to move {state.branch} to golem's commit: most likely the "
            "branch moved on the remote since this run began (someone pushed to it), and "
            "golem never force-pushes over a person's commits. Start the follow-up again "
            f"to work on the branch as it is now (git said: {exc.message})",
            command=exc.command,
            returncode=exc.returncode,
            output=exc.output,
        ) from exc
    return state.commit


async def _post_replies(ex: Execution, pr: PullRequest, discussion: ReviewDiscussion) -> None:
    """Post each reply not yet posted (marked and saved one by one: a resumed run does not
    reply twice). A run whose agent recorded none (an external CLI agent cannot) answers
    the requesting thread, or the conversation, with the agent's summary."""
    state = ex.state
    if not state.replies:
        follow = _follow_up(ex)
        threads = {thread.id for thread in discussion.threads}
        thread = follow.thread if follow.thread in threads else None
        body = state.summary or "golem looked into this but has nothing to add."
        state.replies.append(ThreadReply(thread=thread, body=body))
        ex.save()
    for reply in state.replies:
        if reply.posted:
            continue
        await ex.forge.reply(pr, reply.thread, ex.secrets.mask(reply.body))
        reply.posted = True
        ex.save()


def _reviewers_to_ask(ex: Execution, discussion: ReviewDiscussion) -> list[str]:
    """Who reviewed, golem itself (its commit author, or a bot account) left out."""
    own = {ex.config.forge.author_name.lower()}
    return [
        name
        for name in discussion.reviewers()
        if name.lower() not in own and not name.endswith("[bot]")
    ]
