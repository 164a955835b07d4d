"""A forge's trigger: start a run for an issue, or a follow-up for a pull request golem
opened (once per delivery, one at a time per issue or pull request), acknowledge it there,
and report its end there. The same for every forge: only reading deliveries
(``github_events``, ``gitlab_events``) and reaching the forge (``reach``) differ.

Deduplication has two memories. This server remembers the deliveries it handled and the
run it started for each issue and pull request; the discussion remembers the rest (see
``comments``): the acknowledgement of each run names the delivery that started it. So a
redelivery, even after a restart or to another server of the same store, starts nothing
new, and neither does a second request while a run is in progress there.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import OrderedDict
from typing import Literal

from pydantic import BaseModel

from golem.blueprint import RunRequest, RunState
from golem.core.errors import Problem, QueueFull
from golem.core.server_config import TriggerConfig
from golem.forge import Forge
from golem.service.state import ServerState
from golem.service.trigger import comments
from golem.service.trigger.calls import Call, IssueCall, ReviewCall
from golem.service.trigger.follow_ups import FollowUps
from golem.service.trigger.reach import ForgeReach
from golem.service.trigger.watch import Watchers

__all__ = ["Trigger", "TriggerAnswer"]

log = logging.getLogger("golem.service.trigger")
REMEMBERED = 10_000  # deliveries kept in memory


class TriggerAnswer(BaseModel):
    """What the webhook answers the forge (shown in the webhook's recent deliveries)."""

    status: Literal["ok", "ignored", "started", "running", "duplicate"]
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
        self._deliveries: OrderedDict[str, str] = OrderedDict()
        self._latest: dict[str, str] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @property
    def provider(self) -> str:
        """The forge's name: ``github`` or ``gitlab``."""
        return self.reach.provider

    def secret(self) -> str | None:
        """The webhook's secret (None: unset; every delivery is refused then)."""
        return self.reach.secret()

    async def start(self, call: Call, delivery: str) -> TriggerAnswer:
        """Start a run for ``call`` unless ``delivery`` started one already or a run is in
        progress there (then that run's id is the answer); a follow-up asked meanwhile
        starts once that run ends."""
        lock = self._locks.setdefault(call.key, asyncio.Lock())
        async with lock:
            known = await self._known(call, delivery)
            if known is not None:
                return known
            if isinstance(call, IssueCall):
                return await self._start_issue(call, delivery)
            return await self._start_follow_up(call, delivery)

    async def _start_issue(self, call: IssueCall, delivery: str) -> TriggerAnswer:
        stranger = await self.follow_ups.stranger(call)
        if stranger is not None:
            return TriggerAnswer(status="ignored", reason=stranger)
        issue = await self.reach.read_issue(call.ref)
        answer = await self._marked(call, delivery, comments.started(issue.comments))
        if answer is not None:
            return answer
        request = RunRequest(
            repo=self.reach.clone_url(call.repo), issue=call.ref,
            blueprint=self.config.blueprint, model=self.config.model, forge=self.reach.provider,
        )  # fmt: skip
        return await self._submit(call, delivery, request)

    async def _start_follow_up(self, call: ReviewCall, delivery: str) -> TriggerAnswer:
        checked = await self.follow_ups.check(call)
        if isinstance(checked, str):
            return TriggerAnswer(status="ignored", reason=checked)
        parent, conversation = checked
        answer = await self._marked(call, delivery, comments.started(conversation))
        if answer is None and not parent.finished:
            answer = self._remember(call, delivery, parent, "running")
        if answer is not None:
            return answer
        request = RunRequest(
            repo=self.reach.clone_url(call.repo), blueprint=self.config.follow_up_blueprint,
            model=self.config.model, forge=self.reach.provider,
            follow_up=self.follow_ups.follow_up(call, parent),
        )  # fmt: skip
        return await self._submit(call, delivery, request)

    async def _marked(
        self, call: Call, delivery: str, marks: list[comments.Started]
    ) -> TriggerAnswer | None:
        """The answer the discussion's marks give: the run this delivery started, or one
        in progress there."""
        for mark in marks:
            run = await self.reach.run_for(call, mark.run_id)
            if run is not None and mark.delivery == delivery:
                return self._remember(call, delivery, run, "duplicate")
            if run is not None and not run.finished:
                return self._remember(call, delivery, run, "running")
        return None

    async def _known(self, call: Call, delivery: str) -> TriggerAnswer | None:
        """The answer this server's memory gives, if any."""
        run_id = self._deliveries.get(delivery)
        if run_id is not None:
            reason = f"delivery {delivery} started run {run_id} already"
            return TriggerAnswer(status="duplicate", reason=reason, run_id=run_id)
        latest = self._latest.get(call.key)
        run = await self.reach.run_for(call, latest) if latest is not None else None
        if run is not None and not run.finished:
            return self._remember(call, delivery, run, "running")
        return None

    def _remember(
        self, call: Call, delivery: str, run: RunState, status: Literal["duplicate", "running"]
    ) -> TriggerAnswer:
        if status == "running" and isinstance(call, ReviewCall):
            self.watchers.want(call, delivery, run.id, self.start)  # starts after it ends
            reason = (
                f"{call.key} has run {run.id} in progress ({run.status}): a follow-up starts "
                "when it ends"
            )
            return TriggerAnswer(status=status, reason=reason, run_id=run.id)
        self.note(delivery, call.key, run.id)
        reason = (
            f"delivery {delivery} started run {run.id} already"
            if status == "duplicate"
            else f"{call.key} has run {run.id} in progress ({run.status})"
        )
        return TriggerAnswer(status=status, reason=reason, run_id=run.id)

    def note(self, delivery: str, key: str, run_id: str) -> None:
        """Remember that ``delivery`` started ``run_id``, the latest run of ``key``."""
        self._deliveries[delivery] = run_id
        self._deliveries.move_to_end(delivery)
        while len(self._deliveries) > REMEMBERED:
            self._deliveries.popitem(last=False)
        self._latest[key] = run_id

    async def _submit(self, call: Call, delivery: str, request: RunRequest) -> TriggerAnswer:
        try:
            run = await self.state.queue.submit(request, self.config.tenant)
        except QueueFull as full:
            self.watchers.say_later(f"busy:{delivery}", call, comments.busy(full.reason, call.noun))
            raise Problem(
                429, f"{full.message}; no run was started: redeliver this delivery later"
            ) from full
        self.note(delivery, call.key, run.id)
        ack = comments.acknowledgement(run.id, delivery, call.why, call.sender, call.noun)
        self.watchers.follow(run.id, call, ack)
        log.info("%s trigger: run %s for %s (%s)", self.provider, run.id, call.key, call.why)
        return TriggerAnswer(status="started", reason=f"{call.why}: run {run.id}", run_id=run.id)

    def follow_previous(self) -> None:
        """Go on watching, in the background, the runs a previous server started and has
        not reported the end of; not at all while the trigger has no secret."""
        if self.secret() is not None:
            self.watchers.recover_later(self.note)

    async def close(self) -> None:
        """Stop watching (a restarted server picks the runs up again)."""
        await self.watchers.close()
