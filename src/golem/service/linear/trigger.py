"""Linear's trigger: a run for an issue (once per delivery, one at a time per issue), its
start said on the issue (a comment, or an agent session's activity) with the issue moved to
the team's first started state, its progress told to an agent session, and its end
reported there with the issue moved to the review state once its pull request is open.

The store keeps a link per run (kind ``linear``): which issue and session it answers, and
whether its start and its end were said; each is claimed (compare and swap) before it is
said, so that servers sharing the store, and a restarted one, say each once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.state import FollowUp
from golem.core.errors import DuplicateDelivery, GolemError, Problem, QueueFull, TrackerError
from golem.core.masking import mask_text
from golem.service.documents import Shelf
from golem.service.linear import reports
from golem.service.linear.client import ActivityKind, LinearClient, LinearIssue, WorkflowState
from golem.service.linear.deliveries import LinearCall
from golem.service.state import ServerState
from golem.service.trigger import TriggerAnswer
from golem.service.trust import floor_for, tier_for
from golem.store import RECHECK, DeliveryRecord

__all__ = ["KIND", "LinearLink", "LinearTrigger"]

log = logging.getLogger("golem.service.linear")
T = TypeVar("T")
Pick = Callable[[list[WorkflowState], LinearIssue], str | None]
KIND = "linear"
STARTED_TYPES = ("started", "completed", "canceled")
"""An issue in a state of these types is not moved to in progress (Linear's advice)."""


class LinearLink(BaseModel):
    """A run started from a Linear issue, and what was said of it there."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    issue_id: str
    identifier: str
    team_id: str
    session_id: str | None = None
    why: str = ""
    actor: str = ""
    acknowledged: bool = False
    reported: bool = False


class LinearTrigger:
    """Runs started by Linear's webhook, for one server."""

    def __init__(self, state: ServerState, client: LinearClient | None = None) -> None:
        self.state = state
        self.config = state.config.server.linear
        self.client = client or LinearClient(self.config)
        self.links: Shelf[LinearLink] = Shelf(state.store, KIND, LinearLink)
        self._agent: str | None = self.config.user_id
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def secret(self) -> str | None:
        """The webhook's signing secret (None: unset; every delivery is refused then)."""
        return os.environ.get(self.config.secret_env) or None

    async def agent_id(self) -> str | None:
        """golem's user in Linear: ``user_id``, else the token's own (None: unknown now)."""
        if self._agent is None:
            try:
                self._agent = (await self.client.viewer()).id
            except TrackerError as exc:
                log.warning("Linear: golem's own user is unknown: %s", exc.message)
        return self._agent

    @property
    def book(self) -> RunBook:
        """The runs of the trigger's tenant."""
        return RunBook(self.state.store.for_tenant(self.config.tenant))

    async def start(self, call: LinearCall, delivery: DeliveryRecord) -> TriggerAnswer:
        """Start a run for ``call``'s issue unless ``delivery`` started one already or one
        is in progress there (its id is the answer then), or the person is no member."""
        lock = self._locks.setdefault(call.issue_id, asyncio.Lock())
        async with lock:
            started = await self.book.store.find_delivery("linear", delivery.ids)
            if started is not None:
                return _duplicate(delivery, started)
            busy = await self._in_progress(call.issue_id)
            if busy is not None:
                reason = f"the issue has run {busy.id} in progress ({busy.status})"
                return TriggerAnswer(status="running", reason=reason, run_id=busy.id)
            stranger = await self._stranger(call)
            if stranger is not None:
                return TriggerAnswer(status="ignored", reason=stranger)
            issue = await self._read(self.client.issue(call.issue_id))
            return await self._submit(call, issue, delivery)

    async def _stranger(self, call: LinearCall) -> str | None:
        """Why the person who asked may not start runs (None: they may)."""
        if call.actor_id is None:
            return None
        user = await self._read(self.client.user(call.actor_id))
        if user is None:
            return f"Linear knows no user {call.actor_id}: an unknown user starts no runs"
        if not user.active:
            return f"{user.name or call.actor_id} is not an active member: no run"
        return None

    async def _submit(
        self, call: LinearCall, issue: LinearIssue, delivery: DeliveryRecord
    ) -> TriggerAnswer:
        project = issue.project
        repo = self.config.repository_for(
            issue.team.key, project.name if project else None, project.id if project else None
        )
        if repo is None:
            return TriggerAnswer(
                status="ignored",
                reason=f"no repository for team {issue.team.key}: name one in "
                "[server.linear] teams (or projects, or repo)",
            )
        secrets = await self.secrets()
        shipped = await self._shipped(call.issue_id) if call.request else None
        if shipped is not None:
            request = self._follow_up(call, issue, shipped, secrets)
            repo = shipped.request.repo
        else:
            request = RunRequest(
                repo=repo, task=reports.issue_task(issue, secrets),
                blueprint=self.config.blueprint, model=self.config.model,
                budget_usd=self.config.budget_usd,
            )  # fmt: skip
        config = self.state.config
        floor = floor_for(config, tenant=self.config.tenant, repo=repo)
        tier = tier_for(None, floor, config.engine.default_tier)
        try:
            run = await self.state.queue.submit(
                request, self.config.tenant, tier=tier, delivery=delivery
            )
        except DuplicateDelivery as twice:
            return _duplicate(delivery, twice.run_id)
        except QueueFull as full:
            raise Problem(
                429, f"{full.message}; no run was started: redeliver this delivery later"
            ) from full
        link = LinearLink(
            run_id=run.id, issue_id=issue.id, identifier=issue.identifier, team_id=issue.team.id,
            session_id=call.session_id, why=call.why, actor=call.actor,
        )  # fmt: skip
        await self.links.for_tenant(self.config.tenant).create(run.id, link)
        self._spawn(run.id, self._follow(run.id))
        what = "follow-up" if request.follow_up is not None else "run"
        log.info("Linear: %s %s for %s (%s)", what, run.id, issue.identifier, call.why)
        return TriggerAnswer(status="started", reason=f"{call.why}: {what} {run.id}", run_id=run.id)

    async def _shipped(self, issue_id: str) -> RunState | None:
        """The issue's latest ended run that opened a pull request (None: none did)."""
        latest: RunState | None = None
        for kept in await self.links.for_tenant(self.config.tenant).all():
            if kept.model.issue_id != issue_id:
                continue
            run = await self.book.load(kept.model.run_id)
            if run is not None and run.finished and run.pr is not None:
                latest = run
        return latest

    def _follow_up(
        self, call: LinearCall, issue: LinearIssue, shipped: RunState, secrets: list[str]
    ) -> RunRequest:
        """A follow-up of ``shipped`` on its pull request's branch: the comment is what
        is asked, the issue its context."""
        assert shipped.pr is not None
        asked = mask_text(call.request.strip(), secrets)
        context = reports.issue_task(issue, secrets)
        follow = FollowUp(
            repo=shipped.pr.repo, number=shipped.pr.number, parent_run=shipped.id,
            requested_by=f"linear:{call.actor or call.actor_id or 'someone'}",
            request=f"{asked}\n\nThe Linear issue it was asked on:\n\n{context}",
        )  # fmt: skip
        return RunRequest(
            repo=shipped.request.repo, forge=shipped.request.forge, follow_up=follow,
            blueprint=self.config.follow_up_blueprint, model=self.config.model,
            budget_usd=self.config.budget_usd,
        )  # fmt: skip

    async def _in_progress(self, issue_id: str) -> RunState | None:
        for kept in await self.links.all():
            link = kept.model
            if link.issue_id != issue_id or link.reported:
                continue
            run = await self.book.load(link.run_id)
            if run is not None and not run.finished:
                return run
        return None

    async def _read(self, work: Coroutine[Any, Any, T]) -> T:
        try:
            return await work
        except TrackerError as exc:
            raise Problem(
                502,
                f"{exc.message}; no run was started: fix [server.linear] or its token, then "
                "redeliver this delivery",
            ) from exc

    async def secrets(self) -> list[str]:
        """Every secret a task or a report could show: Linear's token and webhook secret,
        the tenant's forge tokens and the server's."""
        found = [self.client.token(), self.secret()]
        with contextlib.suppress(GolemError):  # no tokens of its own: none to show
            found += (await self.state.forge_access.for_tenant(self.config.tenant)).secrets()
        forge = self.state.config.forge
        for section in (forge.github, forge.gitlab):
            found.append(section.token() if hasattr(section, "token") else None)
        return [secret for secret in found if secret]

    # Following a run ------------------------------------------------------------------

    def follow_previous(self) -> None:
        """Go on following the runs a previous server started and did not report."""
        if self.secret() is not None:
            self._spawn("recover", self._recover())

    async def _recover(self) -> None:
        for kept in await self.links.all():
            if not kept.model.reported:
                self._spawn(kept.model.run_id, self._follow(kept.model.run_id))

    def _spawn(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        if name in self._tasks:
            work.close()
            return
        task = asyncio.ensure_future(work)
        self._tasks[name] = task
        task.add_done_callback(lambda done: self._ended(name, done))

    def _ended(self, name: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(name) is task:
            del self._tasks[name]
        if not task.cancelled() and task.exception() is not None:
            log.error("Linear: following %s failed", name, exc_info=task.exception())

    async def _follow(self, run_id: str) -> None:
        kept = await self.links.load(run_id)
        if kept is None:
            return
        link = kept.model
        if await self._claim(run_id, "acknowledged"):
            await self._acknowledge(link)
        state = await self._progress(link)
        if state is not None and await self._claim(run_id, "reported"):
            await self._report(link, state)

    async def _claim(self, run_id: str, what: str) -> bool:
        """Claim saying ``what`` (acknowledged, reported) of the run: True for the one
        caller, of every server, that gets to say it."""
        won: list[bool] = []

        def claim(link: LinearLink) -> LinearLink | None:
            won.clear()
            if getattr(link, what):
                return None
            won.append(True)
            return link.model_copy(update={what: True})

        await self.links.change(run_id, claim)
        return bool(won)

    async def _acknowledge(self, link: LinearLink) -> None:
        text = reports.acknowledgement(link.run_id, link.why, link.actor)
        await self._say(link, text, "thought")
        await self._move(link, _first_started)

    async def _progress(self, link: LinearLink) -> RunState | None:
        """The run once it ended, telling an agent session each step it starts."""
        book = self.book
        seen = 0
        with book.watch(link.run_id) as changed:
            while True:
                changed.clear()
                if link.session_id is not None:
                    for seq, event in await book.events(link.run_id, after=seen):
                        seen = seq
                        if event.type == "node_start":
                            step = f"golem: {getattr(event, 'node', '')}"
                            await self._activity(link, "thought", step, ephemeral=True)
                run = await book.load(link.run_id)
                if run is None or run.finished:
                    return run
                await changed.wait(RECHECK)

    async def _report(self, link: LinearLink, state: RunState) -> None:
        text = reports.completion(state, await self.secrets())
        failed = state.status in ("failed", "cancelled")
        await self._say(link, text, "error" if failed else "response")
        if state.pr is not None and state.status in ("succeeded", "unverified", "escalated"):
            review = self.config.review_state.casefold()
            await self._move(link, lambda states, _: _named(states, review))

    async def _say(self, link: LinearLink, text: str, kind: ActivityKind) -> None:
        """Say ``text``: as an activity of the link's agent session (Linear comments a
        response or an error on the session's thread itself), else as a comment."""
        if link.session_id is not None and self.config.agent_activities:
            await self._activity(link, kind, text)
            return
        try:
            await self.client.comment(link.issue_id, text)
        except TrackerError as exc:
            log.warning("Linear: could not comment on %s: %s", link.identifier, exc.message)

    async def _activity(
        self, link: LinearLink, kind: ActivityKind, body: str, *, ephemeral: bool = False
    ) -> None:
        assert link.session_id is not None
        try:
            await self.client.activity(link.session_id, kind, body, ephemeral=ephemeral)
        except TrackerError as exc:
            log.warning("Linear: no activity in %s's session: %s", link.identifier, exc.message)

    async def _move(self, link: LinearLink, pick: Pick) -> None:
        """Move the issue to the state ``pick`` chooses among its team's (None: stay)."""
        try:
            issue = await self.client.issue(link.issue_id)
            target = pick(await self.client.states(link.team_id), issue)
            if target is not None and (issue.state is None or issue.state.id != target):
                await self.client.move(link.issue_id, target)
        except TrackerError as exc:
            log.warning("Linear: could not move %s: %s", link.identifier, exc.message)

    async def close(self) -> None:
        """Stop following (a restarted server takes the runs up again)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()


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


def _duplicate(delivery: DeliveryRecord, run_id: str) -> TriggerAnswer:
    reason = f"delivery {delivery.ids[0]} started run {run_id} already: a duplicate starts nothing"
    return TriggerAnswer(status="duplicate", reason=reason, run_id=run_id)
