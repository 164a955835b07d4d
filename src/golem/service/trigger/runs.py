"""The GitHub trigger's runs: start one for an issue (once per delivery, one at a time per
issue), acknowledge it on the issue, and report its end there.

Deduplication has two memories. This server remembers the deliveries it handled and the
run it started for each issue; the issue's discussion remembers the rest (see
``comments``): the acknowledgement of each run names the delivery that started it. So a
redelivery, even after a restart or to another server of the same store, starts nothing
new, and neither does a second request while the issue's run is in progress.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
import weakref
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any, Literal

from pydantic import BaseModel

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.core.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeNotFound,
    GolemError,
    Problem,
    QueueFull,
)
from golem.forge import GitHubForge, Issue
from golem.service.state import ServerState
from golem.service.trigger import comments
from golem.service.trigger.events import IssueCall

__all__ = ["GitHubTrigger", "TriggerAnswer"]

log = logging.getLogger("golem.service.trigger")
READ_TIMEOUT = 8.0  # seconds to read an issue while GitHub waits for our answer (it gives 10)
RECOVER_LIMIT = 200  # newest runs looked at after a restart
RECOVER_WINDOW = 3600.0  # finished this recently (seconds): their end may be unreported
REMEMBERED = 10_000  # deliveries kept in memory
ISSUE_REF = re.compile(r"^[\w.-]+/[\w.-]+#\d+$")  # how the trigger names an issue


class TriggerAnswer(BaseModel):
    """What the webhook answers GitHub (shown in the webhook's recent deliveries)."""

    status: Literal["ok", "ignored", "started", "running", "duplicate"]
    reason: str
    run_id: str | None = None


class GitHubTrigger:
    """Runs started by GitHub's webhooks, for one server."""

    def __init__(self, state: ServerState, forge: GitHubForge | None = None) -> None:
        self.state = state
        self.config = state.config.server.github
        self._forge = forge
        self._deliveries: OrderedDict[str, str] = OrderedDict()
        self._issues: dict[str, str] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._tasks: dict[str, asyncio.Task[object]] = {}
        self._login: str | None = None

    async def github(self) -> GitHubForge:
        """GitHub as the trigger's tenant reaches it: with the tenant's own token, or the
        server's where ``server.shared_forge_tenants`` allows (MissingForgeToken: none)."""
        if self._forge is not None:
            return self._forge
        forge_config = self.state.config.forge
        try:
            credentials = await self.state.forge_access.require(
                self.config.tenant, "github", "the GitHub trigger"
            )
        except GolemError as exc:
            raise Problem(
                503, f"{exc.message}; no run was started: redeliver once it has one"
            ) from exc
        return GitHubForge(forge_config.github, credentials=credentials, labels=forge_config.labels)

    @property
    def book(self) -> RunBook:
        """The runs of the tenant the trigger's runs belong to."""
        return RunBook(self.state.store.for_tenant(self.config.tenant))

    async def own_login(self) -> str | None:
        """The account golem comments as (its token's), or None when GitHub will not say
        (an app's installation token: its comments are a bot's, ignored as such)."""
        if self._login is None:
            try:
                async with asyncio.timeout(READ_TIMEOUT):
                    api = (await self.github()).api
                    user = await api.call("GET", "/user", "the account of golem's token")
            except (ForgeAuthError, ForgeNotFound) as exc:  # it will not say: no use asking
                log.info("GitHub trigger: the token's account is unknown: %s", exc)
                self._login = ""
            except (ForgeError, TimeoutError) as exc:
                log.warning("GitHub trigger: the token's account is unknown for now: %s", exc)
                return None
            else:
                self._login = str(user.get("login") or "") if isinstance(user, dict) else ""
        return self._login or None

    def secret(self) -> str | None:
        """The webhook's secret, from the variable ``secret_env`` names (None: unset)."""
        return os.environ.get(self.config.secret_env) or None

    async def start(self, call: IssueCall, delivery: str) -> TriggerAnswer:
        """Start a run for ``call`` unless ``delivery`` started one already or the issue has
        one in progress (then that run's id is the answer)."""
        lock = self._locks.setdefault(call.ref, asyncio.Lock())
        async with lock:
            known = await self._known(call.ref, delivery)
            if known is not None:
                return known
            issue = await self._read(call.ref)
            for mark in comments.started(issue.comments):
                run = await self._run_of(call.ref, mark.run_id)
                if run is not None and mark.delivery == delivery:
                    return self._remember(call.ref, delivery, run, "duplicate")
                if run is not None and not run.finished:
                    return self._remember(call.ref, delivery, run, "running")
            return await self._submit(call, delivery)

    async def _known(self, ref: str, delivery: str) -> TriggerAnswer | None:
        """The answer this server's memory gives, if any."""
        run_id = self._deliveries.get(delivery)
        if run_id is not None:
            reason = f"delivery {delivery} started run {run_id} already"
            return TriggerAnswer(status="duplicate", reason=reason, run_id=run_id)
        latest = self._issues.get(ref)
        run = await self._run_of(ref, latest) if latest is not None else None
        if run is not None and not run.finished:
            return self._remember(ref, delivery, run, "running")
        return None

    def _remember(
        self, ref: str, delivery: str, run: RunState, status: Literal["duplicate", "running"]
    ) -> TriggerAnswer:
        self._note(delivery, ref, run.id)
        reason = (
            f"delivery {delivery} started run {run.id} already"
            if status == "duplicate"
            else f"{ref} has run {run.id} in progress ({run.status})"
        )
        return TriggerAnswer(status=status, reason=reason, run_id=run.id)

    def _note(self, delivery: str, ref: str, run_id: str) -> None:
        self._deliveries[delivery] = run_id
        self._deliveries.move_to_end(delivery)
        while len(self._deliveries) > REMEMBERED:
            self._deliveries.popitem(last=False)
        self._issues[ref] = run_id

    async def _run_of(self, ref: str, run_id: str) -> RunState | None:
        """The trigger's tenant's run ``run_id`` if it is for issue ``ref`` (an issue's
        comments are anyone's to write: a mark counts only for a run of that issue)."""
        run = await self.book.load(run_id)
        return run if run is not None and run.request.issue == ref else None

    async def _read(self, ref: str) -> Issue:
        try:
            forge = await self.github()
            async with asyncio.timeout(READ_TIMEOUT):
                return await forge.fetch_issue(ref)
        except (ForgeError, TimeoutError) as exc:
            why = exc.message if isinstance(exc, ForgeError) else f"no answer in {READ_TIMEOUT}s"
            raise Problem(
                502,
                f"golem could not read {ref} on GitHub ({why}); no run was started: fix "
                "[forge.github] or the token, then redeliver this delivery",
            ) from exc

    async def _submit(self, call: IssueCall, delivery: str) -> TriggerAnswer:
        request = RunRequest(
            repo=self._clone_url(call.repo),
            issue=call.ref,
            blueprint=self.config.blueprint,
            model=self.config.model,
            forge="github",
        )
        try:
            run = await self.state.queue.submit(request, self.config.tenant)
        except QueueFull as full:
            self._spawn(f"busy:{delivery}", self._say(call, comments.busy(full.reason)))
            raise Problem(
                429, f"{full.message}; no run was started: redeliver this delivery later"
            ) from full
        self._note(delivery, call.ref, run.id)
        ack = comments.acknowledgement(run.id, delivery, call.why, call.sender)
        self.follow(run.id, call, ack)
        log.info("GitHub trigger: run %s for %s (%s)", run.id, call.ref, call.why)
        return TriggerAnswer(status="started", reason=f"{call.why}: run {run.id}", run_id=run.id)

    def _clone_url(self, repo: str) -> str:
        try:
            return self.config.repo_url.format(repo=repo)
        except (KeyError, IndexError, ValueError) as exc:
            raise Problem(
                500,
                f"server.github.repo_url {self.config.repo_url!r} is not a template with "
                "{repo} alone: fix golem.toml",
            ) from exc

    def follow(self, run_id: str, call: IssueCall, ack: str | None) -> None:
        """Watch ``run_id``: post ``ack`` (if any) now, and report its end on the issue."""
        if run_id not in self._tasks:
            self._spawn(run_id, self._follow(run_id, call, ack))

    def _spawn(self, name: str, work: Coroutine[Any, Any, object]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks[name] = task
        task.add_done_callback(lambda done: self._finished(name, done))

    def _finished(self, name: str, task: asyncio.Task[object]) -> None:
        self._tasks.pop(name, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("GitHub trigger: %s failed", name, exc_info=task.exception())

    async def _follow(self, run_id: str, call: IssueCall, ack: str | None) -> None:
        if ack is not None:
            await self._say(call, ack)
        state = await self._wait_end(run_id)
        text = comments.completion(state, await self._secrets()) if state is not None else None
        if text is None:
            return
        try:  # another server (or a restart) may have reported it meanwhile
            if run_id in comments.reported((await self._read(call.ref)).comments):
                return
        except Problem as exc:
            log.warning("GitHub trigger: %s", exc.message)
        await self._say(call, text)

    async def _wait_end(self, run_id: str) -> RunState | None:
        book = self.book
        with book.watch(run_id) as changed:  # the store wakes it, whichever server runs it
            while True:
                changed.clear()
                run = await book.load(run_id)
                if run is None or run.finished:
                    return run
                await changed.wait()

    async def _say(self, call: IssueCall, text: str) -> None:
        try:
            await (await self.github()).comment(
                Issue(title="", repo=call.repo, number=call.number), text
            )
        except GolemError as exc:  # a ForgeError, or no token (Problem)
            log.warning("GitHub trigger: could not comment on %s: %s", call.ref, exc)

    async def _secrets(self) -> list[str]:
        """Every token a report could show: the tenant's, and the server's."""
        server = self.state.config.forge.github.token()
        try:
            own = (await self.state.forge_access.for_tenant(self.config.tenant)).secrets()
        except GolemError:
            own = []
        return [*own, server] if server else own

    def follow_previous(self) -> None:
        """Run ``recover`` in the background (it asks GitHub: the server does not wait);
        not at all while the trigger has no secret (it has started nothing then)."""
        if self.secret() is not None:
            self._spawn("recover", self.recover())

    async def recover(self) -> list[str]:
        """Go on watching the runs a previous server started and has not reported the end
        of (in progress, or ended within the last hour); returns their ids."""
        now = time.time()
        pending: dict[str, list[RunState]] = {}
        for run in await self.book.newest(RECOVER_LIMIT):
            recent = not run.finished or now - run.updated < RECOVER_WINDOW
            ref = run.request.issue or ""
            if run.request.forge == "github" and ISSUE_REF.match(ref) and recent:
                pending.setdefault(ref, []).append(run)
        followed: list[str] = []
        for ref, runs in pending.items():
            followed += await self._recover_issue(ref, runs)
        return followed

    async def _recover_issue(self, ref: str, runs: list[RunState]) -> list[str]:
        repo, _, number = ref.rpartition("#")
        try:
            issue = await self._read(ref)
        except Problem as exc:
            log.warning("GitHub trigger: not watching the runs of %s: %s", ref, exc.message)
            return []
        marks = {mark.run_id: mark.delivery for mark in comments.started(issue.comments)}
        done = comments.reported(issue.comments)
        call = IssueCall(repo=repo, number=int(number), sender="", why="")
        followed = []
        for run in sorted(runs, key=lambda r: r.created):
            if run.id in marks and run.id not in done:
                self._note(marks[run.id], ref, run.id)
                self.follow(run.id, call, None)
                followed.append(run.id)
        return followed

    async def close(self) -> None:
        """Stop watching (a restarted server picks the runs up again)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
