"""The trigger's background work: post a run's acknowledgement, wait for the run's end and
report it where it was asked for; after a restart, go on watching what a previous server
left unreported. (The follow-ups asked while a run was in progress are the store's pending
requests: ``golem.service.sources.PendingStarts`` starts them.)"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Coroutine
from typing import Any

from golem.blueprint import RunState
from golem.core.errors import Problem
from golem.service.trigger import comments
from golem.service.trigger.calls import Call, IssueCall, ReviewCall
from golem.service.trigger.reach import ForgeReach

__all__ = ["Watchers"]

log = logging.getLogger("golem.service.trigger")
RECOVER_LIMIT = 200  # newest runs looked at after a restart
RECOVER_WINDOW = 3600.0  # finished this recently (seconds): their end may be unreported
ISSUE_REF = re.compile(r"^(?P<repo>[\w.-]+(?:/[\w.-]+)+)#(?P<number>\d+)$")
Note = Callable[[str, str], None]


class Watchers:
    """The tasks that watch a trigger's runs."""

    def __init__(self, reach: ForgeReach) -> None:
        self.reach = reach
        self._tasks: dict[str, asyncio.Task[object]] = {}

    def follow(self, run_id: str, call: Call, ack: str | None) -> None:
        """Watch ``run_id``: post ``ack`` (if any) now, and report its end where ``call``
        asked."""
        if run_id not in self._tasks:
            self._spawn(run_id, self._follow(run_id, call, ack))

    def say_later(self, name: str, call: Call, text: str) -> None:
        """Comment ``text`` where ``call`` asked, without waiting for it."""
        self._spawn(name, self.reach.say(call, text))

    def _spawn(self, name: str, work: Coroutine[Any, Any, object]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks[name] = task
        task.add_done_callback(lambda done: self._finished(name, done))

    def _finished(self, name: str, task: asyncio.Task[object]) -> None:
        if self._tasks.get(name) is task:
            self._tasks.pop(name)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s trigger: %s failed", self.reach.title, name, exc_info=task.exception())

    async def _follow(self, run_id: str, call: Call, ack: str | None) -> None:
        if ack is not None:
            await self.reach.say(call, ack)
        state = await self.wait_end(run_id)
        secrets = await self.reach.secrets()
        text = comments.completion(state, secrets) if state is not None else None
        if text is None:
            return
        try:  # another server (or a restart) may have reported it meanwhile
            if run_id in comments.reported(await self.reach.conversation(call)):
                return
        except Problem as exc:
            log.warning("%s trigger: %s", self.reach.title, exc.message)
        await self.reach.say(call, text)

    async def wait_end(self, run_id: str) -> RunState | None:
        """The run once it has ended (None: it is gone)."""
        book = self.reach.book
        with book.watch(run_id) as changed:  # the store wakes it, whichever server runs it
            while True:
                changed.clear()
                run = await book.load(run_id)
                if run is None or run.finished:
                    return run
                await changed.wait()

    def recover_later(self, note: Note) -> None:
        """``recover`` in the background (it asks the forge: the server does not wait)."""
        self._spawn("recover", self.recover(note))

    async def recover(self, note: Note) -> list[str]:
        """Go on watching the runs a previous server started and has not reported the end
        of (in progress, or ended within the last hour); returns their ids. ``note``
        remembers each one as the latest of its issue or pull request."""
        now = time.time()
        pending: dict[str, tuple[Call, list[RunState]]] = {}
        for run in await self.reach.book.newest(RECOVER_LIMIT):
            call = _asked(run) if run.request.forge == self.reach.provider else None
            if call is not None and (not run.finished or now - run.updated < RECOVER_WINDOW):
                pending.setdefault(call.key, (call, []))[1].append(run)
        followed: list[str] = []
        for call, runs in pending.values():
            followed += await self._recover(call, runs, note)
        return followed

    async def _recover(self, call: Call, runs: list[RunState], note: Note) -> list[str]:
        try:
            conversation = await self.reach.conversation(call)
        except Problem as exc:
            log.warning("%s trigger: not watching %s: %s", self.reach.title, call.key, exc.message)
            return []
        marks = {mark.run_id for mark in comments.started(conversation)}
        done = comments.reported(conversation)
        followed = []
        for run in sorted(runs, key=lambda r: r.created):
            if run.id in marks and run.id not in done:
                note(call.key, run.id)
                self.follow(run.id, call, None)
                followed.append(run.id)
        return followed

    async def close(self) -> None:
        """Stop every task."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()


def _asked(run: RunState) -> Call | None:
    """Where the trigger reports ``run``'s end: its pull request, or its issue."""
    asked = run.request.follow_up
    if asked is not None:
        return ReviewCall(asked.repo, asked.number, "", "", "", None, "")
    found = ISSUE_REF.match(run.request.issue or "")
    if found is None:
        return None
    return IssueCall(repo=found["repo"], number=int(found["number"]), sender="", why="")
