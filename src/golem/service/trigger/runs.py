"""A forge's trigger: start a run for an issue, or a follow-up for a pull request golem
opened (once per delivery, one at a time per issue or pull request), acknowledge it there,
and report its end there. The same for every forge: only reading deliveries
(``github_events``, ``gitlab_events``) and reaching the forge (``reach``) differ.

A delivery starts at most one run, whatever redelivers it: the store keeps its ids with the
run it started, in the same transaction (``store.runs.create``), so the same delivery again,
to this server or another of the store, before or after a restart, is answered
``duplicate`` with that run, and the database refuses a second one however close they
come. A second request while a run is in progress there starts nothing either: this
server remembers each issue's and pull request's latest run, and the discussion's marks
(``comments``) tell what another server or a restarted one started. A follow-up asked
meanwhile is queued: kept in the store (``store.pending``), one per person who may push,
until that run ends; then it starts once, claimed in the step that keeps its run, on
whichever server sees the end (a restarted one too).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Literal

from pydantic import BaseModel

from golem.blueprint import RunRequest, RunState
from golem.core.errors import DuplicateDelivery, PendingTaken, Problem, QueueFull
from golem.core.server_config import TriggerConfig
from golem.forge import Forge
from golem.service.sources import PendingStarts
from golem.service.state import ServerState
from golem.service.trigger import comments
from golem.service.trigger.calls import Call, IssueCall, ReviewCall
from golem.service.trigger.follow_ups import FollowUps
from golem.service.trigger.outsiders import outsider, review_outsider
from golem.service.trigger.queued import asked_again, kept
from golem.service.trigger.reach import ForgeReach
from golem.service.trigger.watch import Watchers
from golem.store import DeliveryRecord, PendingRecord

__all__ = ["Trigger", "TriggerAnswer"]

log = logging.getLogger("golem.service.trigger")


class TriggerAnswer(BaseModel):
    """What the webhook answers the forge (shown in the webhook's recent deliveries)."""

    status: Literal["ok", "ignored", "started", "running", "queued", "duplicate"]
    reason: str
    run_id: str | None = None


class Trigger:
    """Runs started by one forge's webhooks, for one server."""

    def __init__(
        self,
        state: ServerState,
        provider: Literal["github", "gitlab"],
        config: TriggerConfig,
        forge: Forge | None = None,
    ) -> None:
        self.state = state
        self.config = config
        self.reach = ForgeReach(state, provider, config, forge)
        self.watchers = Watchers(self.reach)
        self.follow_ups = FollowUps(self.reach)
        self.pending = PendingStarts(self.reach.book.store, provider, self._start_kept)
        self._latest: dict[str, str] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @property
    def provider(self) -> str:
        """The forge's name: ``github`` or ``gitlab``."""
        return self.reach.provider

    def secret(self) -> str | None:
        """The webhook's secret (None: unset; every delivery is refused then)."""
        return self.reach.secret()

    async def start(self, call: Call, delivery: DeliveryRecord) -> TriggerAnswer:
        """Start a run for ``call`` unless ``delivery`` started one already or a run is in
        progress there (then that run's id is the answer); a follow-up asked meanwhile by
        someone who may push is queued: it starts once that run ends."""
        return await self._start(call, delivery, None)

    async def _start_kept(self, pending: PendingRecord) -> TriggerAnswer:
        """Start the request ``pending`` keeps (its run ended), claiming it as it starts;
        a request that will never start (refused now, its delivery seen) is forgotten."""
        call, delivery = asked_again(pending)
        answer = await self._start(call, delivery, pending)
        if answer.status in ("ignored", "duplicate"):
            await self.reach.book.store.pending.drop(pending)
        return answer

    async def _start(
        self, call: Call, delivery: DeliveryRecord, pending: PendingRecord | None
    ) -> TriggerAnswer:
        lock = self._locks.setdefault(call.key, asyncio.Lock())
        async with lock:
            started = await self.reach.book.store.deliveries.find(delivery.source, delivery.ids)
            if started is not None:
                return _duplicate(delivery, started)
            if isinstance(call, IssueCall):
                return await self._start_issue(call, delivery, pending)
            return await self._start_follow_up(call, delivery, pending)

    async def _start_issue(
        self, call: IssueCall, delivery: DeliveryRecord, pending: PendingRecord | None
    ) -> TriggerAnswer:
        """A run for the issue; a mention made while the issue's run is in progress is
        queued (a label is answered ``running``)."""
        busy = await self._latest_in_progress(call)
        if busy is not None and call.request is None:
            return self._running(call, busy)
        stranger = await self.follow_ups.stranger(call)  # before anything waits
        if stranger is not None:
            return TriggerAnswer(status="ignored", reason=stranger)
        if busy is not None:
            return await self._queue(call, delivery, busy, pending)
        issue = await self.reach.read_issue(call.ref)
        busy = await self._marked_in_progress(call, comments.started(issue.comments))
        if busy is not None and call.request is None:
            return self._running(call, busy)
        if busy is not None:
            return await self._queue(call, delivery, busy, pending)
        request = RunRequest(
            repo=self.reach.clone_url(call.repo),
            issue=call.ref,
            blueprint=self.config.blueprint,
            model=self.config.model,
            forge=self.reach.provider,
        )
        stranger = call.unasked
        if stranger is None and self.state.config.server.trust.outsiders is not None:
            stranger = await outsider(self.reach, call.repo, issue)
        return await self._submit(call, delivery, request, outsider=stranger, pending=pending)

    async def _start_follow_up(
        self, call: ReviewCall, delivery: DeliveryRecord, pending: PendingRecord | None
    ) -> TriggerAnswer:
        checked = await self.follow_ups.check(call)  # who asks may push: before anything waits
        if isinstance(checked, str):
            return TriggerAnswer(status="ignored", reason=checked)
        parent, discussion = checked
        busy = await self._latest_in_progress(call)
        if busy is None:
            busy = await self._marked_in_progress(call, comments.started(discussion.comments))
        if busy is None and not parent.finished:
            busy = parent
        if busy is not None:
            return await self._queue(call, delivery, busy, pending)
        request = RunRequest(
            repo=self.reach.clone_url(call.repo),
            blueprint=self.config.follow_up_blueprint,
            model=self.config.model,
            forge=self.reach.provider,
            follow_up=self.follow_ups.follow_up(call, parent),
        )
        stranger = None
        if self.state.config.server.trust.outsiders is not None:
            stranger = await review_outsider(self.reach, call.repo, discussion)
        return await self._submit(call, delivery, request, outsider=stranger, pending=pending)

    async def _queue(
        self,
        call: Call,
        delivery: DeliveryRecord,
        busy: RunState,
        pending: PendingRecord | None,
    ) -> TriggerAnswer:
        """Keep ``call`` pending until ``busy`` ends (one request per person and thread,
        masked); ``pending``, the request it was read from, waits for ``busy`` as it was
        read."""
        if pending is not None:
            await self.pending.wait_again(pending, busy.id)
        else:
            secrets = await self.reach.secrets()
            await self.pending.keep(kept(self.provider, call, delivery, busy.id, secrets))
        reason = (
            f"{call.key} has run {busy.id} in progress ({busy.status}): {call.sender}'s "
            f"{'mention' if isinstance(call, IssueCall) else 'follow-up'} is queued, and "
            "starts when it ends"
        )
        return TriggerAnswer(status="queued", reason=reason, run_id=busy.id)

    async def _latest_in_progress(self, call: Call) -> RunState | None:
        """The run this server last started there, if it is still in progress."""
        latest = self._latest.get(call.key)
        run = await self.reach.run_for(call, latest) if latest is not None else None
        return run if run is not None and not run.finished else None

    async def _marked_in_progress(
        self, call: Call, marks: list[comments.Started]
    ) -> RunState | None:
        """A run the discussion's marks name (any server's) that is still in progress."""
        for mark in marks:
            run = await self.reach.run_for(call, mark.run_id)
            if run is not None and not run.finished:
                self.note(call.key, run.id)
                return run
        return None

    def _running(self, call: Call, run: RunState) -> TriggerAnswer:
        reason = f"{call.key} has run {run.id} in progress ({run.status})"
        return TriggerAnswer(status="running", reason=reason, run_id=run.id)

    def note(self, key: str, run_id: str) -> None:
        """Remember ``run_id`` as the latest run of ``key`` (an issue, a pull request)."""
        self._latest[key] = run_id

    async def _submit(
        self,
        call: Call,
        delivery: DeliveryRecord,
        request: RunRequest,
        *,
        outsider: str | None = None,
        pending: PendingRecord | None = None,
    ) -> TriggerAnswer:
        """Queue the run in the tier the trust policy gives it (the queue weighs its
        tenant's, its repository's, the trigger's and, with ``outsider`` (why its discussion
        is an outsider's), theirs); with ``pending``, the queued request it answers,
        claimed with it."""
        shown = delivery.ids[0]
        try:
            run = await self.state.queue.submit(
                request, self.config.tenant, outsider=outsider, delivery=delivery, pending=pending
            )
        except DuplicateDelivery as twice:  # another server (or request) kept it first
            return _duplicate(delivery, twice.run_id)
        except PendingTaken as taken:  # another server started it first
            return TriggerAnswer(status="duplicate", reason=taken.message)
        except QueueFull as full:
            if pending is not None:  # still pending: the next run's end tries it again
                raise
            self.watchers.say_later(f"busy:{shown}", call, comments.busy(full.reason, call.noun))
            raise Problem(
                429, f"{full.message}; no run was started: redeliver this delivery later"
            ) from full
        self.note(call.key, run.id)
        unasked = call.unasked if isinstance(call, IssueCall) else None
        if unasked is not None:  # seen in golem serve's log, as Linear's of no person
            log.warning("%s trigger: run %s runs as an outsider's: %s", self.provider, run.id,
                        unasked)  # fmt: skip
        ack = comments.acknowledgement(run.id, shown, call.why, call.sender, call.noun, unasked)
        if pending is not None:
            ack = comments.answering(ack, pending.run_id, shown, call.sender)
        self.watchers.follow(run.id, call, ack)
        log.info("%s trigger: run %s for %s (%s)", self.provider, run.id, call.key, call.why)
        return TriggerAnswer(status="started", reason=f"{call.why}: run {run.id}", run_id=run.id)

    def follow_previous(self) -> None:
        """Go on watching, in the background, the runs a previous server started and has
        not reported the end of; not at all while the trigger has no secret."""
        if self.secret() is not None:
            self.watchers.recover_later(self.note)
            self.pending.resume_later()

    async def close(self) -> None:
        """Stop watching (a restarted server picks the runs up again)."""
        await self.watchers.close()
        await self.pending.close()


def _duplicate(delivery: DeliveryRecord, run_id: str) -> TriggerAnswer:
    reason = f"delivery {delivery.ids[0]} started run {run_id} already: a duplicate starts nothing"
    return TriggerAnswer(status="duplicate", reason=reason, run_id=run_id)
