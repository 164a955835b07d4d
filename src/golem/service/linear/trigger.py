"""Linear's trigger: a run for an issue (once per delivery, one at a time per issue), its
status said on the issue (one comment edited in place, or an agent session's activities)
with the issue moved to the team's first started state, and its end reported there with
the issue moved to the review state once its pull request is open.

Each run is kept with its thread (``ThreadRecord``: source ``linear``, thread the issue's
id, detail ``LinearThread``) in the step that queues it; ``golem.service.sources.
StatusKeeper`` keeps its status and reports its end once, across servers sharing the store
and a restart, as it does for Slack (``LinearReporter`` says how, on Linear). A member's
comment asking golem while the issue's run is in progress is queued in the store
(``store.pending``, one per person and issue) and started once that run ends, on whichever
server sees the end."""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.state import FollowUp
from golem.core.errors import DuplicateDelivery, PendingTaken, Problem, QueueFull, TrackerError
from golem.core.masking import mask_text
from golem.service.linear import reports
from golem.service.linear.client import LinearClient, LinearIssue
from golem.service.linear.deliveries import LinearCall
from golem.service.linear.people import LinearMembers
from golem.service.linear.queued import asked_again, kept
from golem.service.linear.reporter import SOURCE, LinearReporter, LinearThread
from golem.service.sources import PendingStarts, StatusKeeper, known_secrets
from golem.service.state import ServerState
from golem.service.trigger import TriggerAnswer
from golem.store import DeliveryRecord, PendingRecord, ThreadRecord

__all__ = ["LinearTrigger"]

log = logging.getLogger("golem.service.linear")
NO_PERSON = "no person asked (Linear itself did: a workflow automation, an integration)"
T = TypeVar("T")


class LinearTrigger:
    """Runs started by Linear's webhook, for one server."""

    def __init__(self, state: ServerState, client: LinearClient | None = None) -> None:
        self.state = state
        self.config = state.config.server.linear
        self.client = client or LinearClient(self.config)
        self._agent: str | None = self.config.user_id
        self.members = LinearMembers(self.client, self.config.people)
        reporter = LinearReporter(self.client, self.config, self._secrets, self.agent_id)
        self.keeper = StatusKeeper(state.store, reporter, interval=self.config.update_interval)
        self.pending = PendingStarts(self.book.store, SOURCE, self._start_kept)
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

    async def start(
        self, call: LinearCall, delivery: DeliveryRecord, pending: PendingRecord | None = None
    ) -> TriggerAnswer:
        """Start a run for ``call``'s issue unless ``delivery`` started one already or one
        is in progress there (its id is the answer then), the issue's team has no
        repository, or the person may not ask (``LinearMembers``). A member's comment
        asking golem while a run is in progress is queued: kept in the store until that
        run ends (``pending``: the one starting now, claimed as it does)."""
        lock = self._locks.setdefault(call.issue_id, asyncio.Lock())
        async with lock:
            started = await self.book.store.deliveries.find(SOURCE, delivery.ids)
            if started is not None:
                return _duplicate(delivery, started)
            busy = await self._in_progress(call.issue_id)
            if busy is not None and not (call.request and call.actor_id):
                reason = f"the issue has run {busy.id} in progress ({busy.status})"
                return TriggerAnswer(status="running", reason=reason, run_id=busy.id)
            issue = await self._read(self.client.issue(call.issue_id))
            repo = self._repository(issue)
            if repo is None:
                return TriggerAnswer(
                    status="ignored",
                    reason=f"no repository for team {issue.team.key}: name one in "
                    "[server.linear] teams (or projects, or repo)",
                )
            stranger = await self._stranger(call, issue)
            if stranger is not None:
                return TriggerAnswer(status="ignored", reason=stranger)
            if busy is not None:
                return await self._queue(call, delivery, busy, pending)
            return await self._submit(call, issue, repo, delivery, pending)

    async def _queue(
        self,
        call: LinearCall,
        delivery: DeliveryRecord,
        busy: RunState,
        pending: PendingRecord | None = None,
    ) -> TriggerAnswer:
        """Keep ``call`` pending until ``busy`` ends (one request per person and issue);
        ``pending``, the request it was read from, waits for ``busy`` as it was read."""
        if pending is not None:
            await self.pending.wait_again(pending, busy.id)
        else:
            secrets = await self._secrets(self.config.tenant)
            await self.pending.keep(kept(call, delivery, busy.id, secrets))
        reason = (
            f"the issue has run {busy.id} in progress ({busy.status}): "
            f"{call.actor or call.actor_id}'s request is queued, and starts when it ends"
        )
        return TriggerAnswer(status="queued", reason=reason, run_id=busy.id)

    async def _start_kept(self, pending: PendingRecord) -> TriggerAnswer:
        """Start the request ``pending`` keeps (its run ended), claiming it as it starts;
        one that will never start (refused now, its delivery seen) is forgotten."""
        call, delivery = asked_again(pending)
        answer = await self.start(call, delivery, pending)
        if answer.status in ("ignored", "duplicate"):
            await self.book.store.pending.drop(pending)
        elif answer.status == "started":
            log.info("Linear: run %s answers the request queued while %s ran", answer.run_id,
                     pending.run_id)  # fmt: skip
        return answer

    async def _stranger(self, call: LinearCall, issue: LinearIssue) -> str | None:
        """Why the person who asked may not start runs on ``issue`` (None: they may, or no
        person asked: that run counts as an outsider's, ``_outsider``)."""
        if call.actor_id is None:
            return None
        return await self._read(self.members.refusal(call.actor_id, issue))

    async def _outsider(self, call: LinearCall, issue: LinearIssue) -> str | None:
        """Why the run counts as an outsider's (None: it does not): no person asked
        (Linear itself: a workflow automation, an integration's comment; the people rule
        has nobody to weigh), or, when ``server.trust.outsiders`` is set, someone who may
        not ask wrote on the issue."""
        if call.actor_id is None:
            return NO_PERSON
        if self.state.config.server.trust.outsiders is None:
            return None
        return await self.members.outsider(issue, await self.agent_id())

    def _repository(self, issue: LinearIssue) -> str | None:
        """The repository of the issue's project or team (None: the configuration names
        none for it)."""
        project = issue.project
        return self.config.repository_for(
            issue.team.key, project.name if project else None, project.id if project else None
        )

    async def _submit(
        self,
        call: LinearCall,
        issue: LinearIssue,
        repo: str,
        delivery: DeliveryRecord,
        pending: PendingRecord | None = None,
    ) -> TriggerAnswer:
        secrets = await self._secrets(self.config.tenant)
        shipped = await self._shipped(call.issue_id) if call.request else None
        if shipped is not None:
            request = self._follow_up(call, issue, shipped, secrets)
            repo = shipped.request.repo
        else:
            request = RunRequest(
                repo=repo,
                task=reports.issue_task(issue, secrets),
                blueprint=self.config.blueprint,
                model=self.config.model,
                budget_usd=self.config.budget_usd,
            )
        outsider = await self._outsider(call, issue)
        why = call.why
        if outsider is not None:
            seen = logging.WARNING if call.actor_id is None else logging.INFO  # golem serve's
            log.log(seen, "Linear: %s: it runs as an outsider's: %s", issue.identifier, outsider)
            why = f"{why}; it runs as an outsider's: {outsider}"
        link = LinearThread(
            identifier=issue.identifier,
            team_id=issue.team.id,
            session_id=call.session_id,
            why=why[:512],
            actor=call.actor[:256],
        )
        thread = ThreadRecord(source=SOURCE, thread=issue.id, detail=link.model_dump_json())
        try:
            run = await self.state.queue.submit(
                request,
                self.config.tenant,
                outsider=outsider,
                delivery=delivery,
                thread=thread,
                pending=pending,
            )
        except DuplicateDelivery as twice:
            return _duplicate(delivery, twice.run_id)
        except PendingTaken as taken:  # another server started it first
            return TriggerAnswer(status="duplicate", reason=taken.message)
        except QueueFull as full:
            if pending is not None:  # still pending: tried again when the queue has room
                raise
            raise Problem(
                429, f"{full.message}; no run was started: redeliver this delivery later"
            ) from full
        self.keeper.keep(thread.model_copy(update={"run_id": run.id, "tenant": self.config.tenant}))
        what = "follow-up" if request.follow_up is not None else "run"
        log.info("Linear: %s %s for %s (%s)", what, run.id, issue.identifier, call.why)
        return TriggerAnswer(status="started", reason=f"{call.why}: {what} {run.id}", run_id=run.id)

    async def _shipped(self, issue_id: str) -> RunState | None:
        """The issue's latest ended run that opened a pull request (None: none did)."""
        for thread in await self.book.store.threads.runs_in(SOURCE, issue_id):
            run = await self.book.load(thread.run_id)
            if run is not None and run.finished and run.pr is not None:
                return run
        return None

    def _follow_up(
        self, call: LinearCall, issue: LinearIssue, shipped: RunState, secrets: list[str]
    ) -> RunRequest:
        """A follow-up of ``shipped`` on its pull request's branch: the comment is what
        is asked, the issue its context."""
        assert shipped.pr is not None
        asked = mask_text(call.request.strip(), secrets)
        context = reports.issue_task(issue, secrets)
        follow = FollowUp(
            repo=shipped.pr.repo,
            number=shipped.pr.number,
            parent_run=shipped.id,
            requested_by=f"linear:{call.actor or call.actor_id or 'someone'}",
            request=f"{asked}\n\nThe Linear issue it was asked on:\n\n{context}",
        )
        return RunRequest(
            repo=shipped.request.repo,
            forge=shipped.request.forge,
            follow_up=follow,
            blueprint=self.config.follow_up_blueprint,
            model=self.config.model,
            budget_usd=self.config.budget_usd,
        )

    async def _in_progress(self, issue_id: str) -> RunState | None:
        """The issue's run that has not ended, if one has not."""
        for thread in await self.book.store.threads.runs_in(SOURCE, issue_id):
            if thread.reported is not None:
                continue
            run = await self.book.load(thread.run_id)
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

    def _own_secrets(self) -> list[str]:
        """Linear's token and the webhook's signing secret."""
        return [secret for secret in (self.client.token(), self.secret()) if secret]

    async def _secrets(self, tenant: str | None) -> list[str]:
        """Every secret a task or a report could show (``known_secrets``)."""
        return await known_secrets(self.state, tenant, self._own_secrets())

    def follow_previous(self) -> None:
        """Go on with the runs a previous server left unreported (with a secret only)."""
        if self.secret() is not None:
            self.keeper.recover_later()
            self.pending.resume_later()

    async def close(self) -> None:
        """Stop keeping the status comments (a restarted server goes on)."""
        await self.keeper.close()
        await self.pending.close()


def _duplicate(delivery: DeliveryRecord, run_id: str) -> TriggerAnswer:
    reason = f"delivery {delivery.ids[0]} started run {run_id} already: a duplicate starts nothing"
    return TriggerAnswer(status="duplicate", reason=reason, run_id=run_id)
