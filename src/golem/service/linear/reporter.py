"""A run's status on its Linear issue, and the report of its end: Linear's side of
``golem.service.sources.StatusKeeper`` (its ``Reporter``).

On an issue, the status is one comment, edited in place (``commentUpdate``) as the run
advances, and the end a comment of its own. In an agent session nothing can be edited
(Linear keeps a session's activities as they were emitted): the status is a thought said
once, each new step an ephemeral thought (Linear replaces it with the session's next
activity, so the session shows the step the run is at), and the end a response (an error
when the run failed or was cancelled), which Linear comments on the session's thread
itself. The issue moves to its team's first started state when the status is posted, and
to the review state with the end once a pull request is open. Every text is masked with
the secrets golem knows before it leaves."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from golem.core.errors import TrackerError
from golem.core.linear_config import LinearConfig
from golem.core.masking import mask_text
from golem.service.linear import reports
from golem.service.linear.client import LinearClient, LinearIssue, WorkflowState
from golem.service.sources import RunProgress
from golem.store import ThreadRecord

__all__ = ["SOURCE", "LinearReporter", "LinearThread"]

log = logging.getLogger("golem.service.linear")
SOURCE = "linear"
"""Linear's name in the store (its deliveries, its threads: a thread is an issue)."""
STARTED_TYPES = ("started", "completed", "canceled")
"""An issue in a state of these types is not moved to in progress (Linear's advice)."""
SHIPPED = ("succeeded", "unverified", "escalated")
"""A run that ended so with a pull request moves its issue to the review state."""
Pick = Callable[[list[WorkflowState], LinearIssue], str | None]


class LinearThread(BaseModel):
    """What a run's thread record (source ``linear``, thread: the issue's id) keeps of
    Linear, as its ``detail``."""

    model_config = ConfigDict(extra="forbid")

    identifier: str = Field(max_length=64)
    team_id: str = Field(max_length=64)
    session_id: str | None = Field(None, max_length=64)
    """The agent session golem reports in (None: it comments on the issue)."""
    why: str = Field("", max_length=512)
    actor: str = Field("", max_length=256)

    @classmethod
    def of(cls, thread: ThreadRecord) -> LinearThread:
        """The Linear side of ``thread`` (TrackerError: it is not one golem kept)."""
        try:
            return cls.model_validate_json(thread.detail or "{}")
        except ValidationError as exc:
            raise TrackerError(
                f"run {thread.run_id}'s Linear thread is not golem's: {exc.error_count()} "
                "problem(s); nothing is reported on it"
            ) from exc


class LinearReporter:
    """Comments (or an agent session's activities) on a run's issue, and its moves."""

    source = SOURCE

    def __init__(
        self,
        client: LinearClient,
        config: LinearConfig,
        secrets: Callable[[str | None], Awaitable[list[str]]],
        agent: Callable[[], Awaitable[str | None]],
    ) -> None:
        self.client = client
        self.config = config
        self._secrets = secrets
        self._agent = agent
        self._steps: dict[str, str] = {}
        """What each run's session was told of its step last (by this server)."""

    def _session(self, link: LinearThread) -> str | None:
        return link.session_id if self.config.agent_activities else None

    async def _masked(self, thread: ThreadRecord, text: str) -> str:
        return mask_text(text, await self._secrets(thread.tenant))

    async def post_status(self, thread: ThreadRecord, progress: RunProgress) -> str:
        """Say the run started (a comment, or a session's thought) and move the issue to
        in progress; the comment's (activity's) id."""
        link = LinearThread.of(thread)
        session = self._session(link)
        if session is not None:
            text = await self._masked(thread, reports.session_start(progress, link.why, link.actor))
            posted = await self.client.activity(session, "thought", text)
        else:
            text = await self._masked(thread, reports.status(progress, link.why, link.actor))
            posted = await self.client.comment(thread.thread, text)
        await self._move(thread, link, _first_started)
        return posted

    async def update_status(self, thread: ThreadRecord, status: str, progress: RunProgress) -> None:
        """Edit the status comment; in a session, tell a new step (ephemeral)."""
        link = LinearThread.of(thread)
        session = self._session(link)
        if session is None:
            text = await self._masked(thread, reports.status(progress, link.why, link.actor))
            await self.client.edit_comment(status, text)
            return
        step = reports.step(progress)
        if progress.finished or self._steps.get(thread.run_id) == step:
            return
        await self.client.activity(
            session, "thought", await self._masked(thread, step), ephemeral=True
        )
        self._steps[thread.run_id] = step

    async def report_end(self, thread: ThreadRecord, progress: RunProgress) -> None:
        """Say how the run ended; move the issue to review once its pull request is open."""
        self._steps.pop(thread.run_id, None)
        link = LinearThread.of(thread)
        text = await self._masked(thread, reports.completion(progress))
        session = self._session(link)
        if session is not None:
            failed = progress.status in ("failed", "cancelled")
            await self.client.activity(session, "error" if failed else "response", text)
        else:
            await self.client.comment(thread.thread, text)
        if progress.pr_url is not None and progress.status in SHIPPED:
            review = self.config.review_state.casefold()
            await self._move(thread, link, lambda states, _: _named(states, review))

    async def find_status(self, thread: ThreadRecord) -> str | None:
        """golem's status comment (or session thought) of the run, found by its mark."""
        link = LinearThread.of(thread)
        mark = reports.status_mark(thread.run_id)
        session = self._session(link)
        if session is not None:  # only golem says anything in its own session
            thoughts = await self.client.thoughts(session)
            return next((t.id for t in thoughts if mark in t.body), None)
        own = await self._agent()
        if own is None:
            raise TrackerError(
                "golem's own user in Linear is unknown yet: its comments cannot be told"
            )
        issue = await self.client.issue(thread.thread)
        return next(
            (
                c.id
                for c in issue.comments
                if mark in c.body and c.user is not None and c.user.id == own
            ),
            None,
        )

    async def _move(self, thread: ThreadRecord, link: LinearThread, pick: Pick) -> None:
        """Move the issue to the state ``pick`` chooses among its team's (None: stay); a
        failure is logged (the report is said all the same)."""
        try:
            issue = await self.client.issue(thread.thread)
            target = pick(await self.client.states(link.team_id), issue)
            if target is not None and (issue.state is None or issue.state.id != target):
                await self.client.move(thread.thread, target)
        except TrackerError as exc:
            log.warning("Linear: could not move %s: %s", link.identifier, exc.message)


def _first_started(states: list[WorkflowState], issue: LinearIssue) -> str | None:
    """The team's first state of type started (lowest position), unless the issue is in
    a started, completed or canceled state already (it stays there)."""
    if issue.state is not None and issue.state.type in STARTED_TYPES:
        return None
    started = sorted((s for s in states if s.type == "started"), key=lambda s: s.position)
    return started[0].id if started else None


def _named(states: list[WorkflowState], name: str) -> str | None:
    """The state named ``name`` (casefolded), if the team has it."""
    return next((s.id for s in states if s.name.casefold() == name), None)
