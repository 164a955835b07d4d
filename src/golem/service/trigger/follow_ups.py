"""Whether a review follow-up may start: the pull request is one golem opened (its body's
mark names a run of the trigger's tenant that opened exactly it), and the person who asked
may push to the repository; anyone else is told so, once per person and pull request."""

from __future__ import annotations

from golem.blueprint import RunState
from golem.blueprint.state import FollowUp
from golem.blueprint.steps.pr_text import marked_run
from golem.core.errors import ForgeError
from golem.forge import IssueComment, PullRequest, ReviewDiscussion
from golem.forge.reviews import may_write
from golem.service.trigger import comments
from golem.service.trigger.calls import IssueCall, ReviewCall
from golem.service.trigger.reach import ForgeReach

__all__ = ["FollowUps"]


class FollowUps:
    """The checks before a follow-up run, and its request."""

    def __init__(self, reach: ForgeReach) -> None:
        self.reach = reach

    async def check(self, call: ReviewCall) -> tuple[RunState, ReviewDiscussion] | str:
        """The run that opened the pull request and its review (what the follow-up reads),
        or why no follow-up starts (a refusal is commented when the person may not ask)."""
        pr = await self.reach.read_pull(call.repo, call.number)
        parent = await self._opener(pr, call)
        if isinstance(parent, str):
            return parent
        discussion = await self.reach.discussion(call, pr)
        refused = await self._refused(call, discussion.comments)
        return refused if refused is not None else (parent, discussion)

    async def _opener(self, pr: PullRequest, call: ReviewCall) -> RunState | str:
        """The run that opened ``pr``, found by its body's mark and checked against the
        store: a body anyone may edit proves nothing by itself."""
        run_id = marked_run(pr.body)
        if run_id is None:
            return f"{call.key} is not a pull request golem opened (its body has no golem mark)"
        run = await self.reach.book.load(run_id)
        opened = run.pr if run is not None else None
        if (
            run is None
            or opened is None
            or run.request.forge != self.reach.provider
            or (opened.repo, opened.number) != (call.repo, call.number)
        ):
            return (
                f"{call.key}'s mark names run {run_id}, which did not open it (not among "
                f"tenant {self.reach.config.tenant!r}'s runs): no follow-up"
            )
        return run

    async def _refused(self, call: ReviewCall, conversation: list[IssueComment]) -> str | None:
        """Why ``call.sender`` may not ask (after telling them once), or None: they may."""
        try:
            permission = await (await self.reach.forge()).permission(call.repo, call.user)
        except ForgeError as exc:
            return f"golem could not read {call.sender}'s permission on {call.repo}: {exc.message}"
        if may_write(permission):
            return None
        if not comments.refused(conversation, call.sender):
            await self.reach.say(call, comments.refusal(call.sender, self.reach.config.handle))
        return (
            f"{call.sender} has {permission} access to {call.repo}: only people who may push "
            "start follow-ups"
        )

    async def stranger(self, call: IssueCall) -> str | None:
        """Why ``call.member`` may not start a run by a mention (no access to the
        repository), or None: they may, or nobody needs to be checked."""
        if call.member is None:
            return None
        try:
            permission = await (await self.reach.forge()).permission(call.repo, call.member)
        except ForgeError as exc:
            return f"golem could not read {call.sender}'s permission on {call.repo}: {exc.message}"
        if permission == "none":
            return (
                f"{call.sender} is not a member of {call.repo}: only its members start runs "
                "by a mention"
            )
        return None

    def follow_up(self, call: ReviewCall, parent: RunState) -> FollowUp:
        """What the follow-up run is asked: ``parent`` opened the pull request."""
        return FollowUp(
            repo=call.repo,
            number=call.number,
            parent_run=parent.id,
            requested_by=call.sender,
            thread=call.thread,
            request=call.request,
        )
