"""Runs started from Slack (docs/slack.md): a mention of golem's app, or ``/golem``, starts a
run on the repository the message names (``repo: NAME``), else the channel's, else the
only one configured, with the thread it was asked in as its task; a later mention in that
thread follows up on the same branch (a follow-up of the thread's run, on its pull
request), and one made while the thread's run goes on is queued in the store (said in the
thread) and started once that run ends (``PendingStarts``); the buttons of a run's
status message answer its gate or cancel it.

Who asks must be one of ``[server.slack] users`` (a tenant and a role each), and their own
Slack record must let them ask (``SlackPeople``: no bot, guest, deactivated account or
user of another workspace; ``[server.slack.people]``): anyone else is told so once,
privately, and a button they press does nothing.

golem reacts to a request it takes at once, keeps one status message per run in the
thread (``golem.service.sources.StatusKeeper``) and replies there when the run ends. A
delivery is handled once: its ids (the event's, the message's, a command's or click's
trigger) are kept in the store with the run it started, or alone with the answer it got,
so a retry, a replay within Slack's five minutes or the same message's second event does
nothing again, on any server, before or after a restart."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.control import cancel_run, decide_gate
from golem.core.errors import (
    DuplicateDelivery,
    GolemError,
    PendingTaken,
    QueueFull,
    RunConflict,
)
from golem.core.masking import SecretMasker
from golem.core.slack_config import SlackConfig
from golem.service.keys import Principal
from golem.service.slack import messages, mrkdwn
from golem.service.slack.payloads import Action, Command, Mention
from golem.service.slack.people import SlackPeople
from golem.service.slack.queued import asked_again, kept
from golem.service.slack.reporter import SOURCE, SlackReporter, place
from golem.service.slack.requests import run_request
from golem.service.slack.thread import Ask, read_ask, render_thread
from golem.service.sources import PendingStarts, StatusKeeper, known_secrets, submit_from_source
from golem.service.state import ServerState
from golem.store import DeliveryRecord, PendingRecord, Store, ThreadRecord

if TYPE_CHECKING:
    from golem.service.slack.web import SlackWeb

__all__ = ["SOURCE", "SlackAnswer", "SlackTrigger"]

log = logging.getLogger("golem.service.slack")
STRANGERS = "*slack-strangers"
"""Where the answers to people golem does not know are kept once: no tenant is named so."""


class SlackAnswer(BaseModel):
    """What golem made of a request from Slack (Slack reads only the status code; the
    log and the tests read this)."""

    status: Literal["ok", "ignored", "started", "queued", "duplicate", "refused"]
    reason: str
    run_id: str | None = None


class SlackTrigger:
    """Slack's requests to one server, and the status messages of the runs they start."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.config: SlackConfig = state.config.server.slack
        token = os.environ.get(self.config.token_env) or None
        self.web: SlackWeb | None = None
        self.people = SlackPeople(self.config, self._web)
        if token:
            # The Slack SDK's client (and aiohttp) load only for a server that talks to Slack.
            from golem.service.slack.web import SlackWeb  # noqa: PLC0415 - lazy

            self.web = SlackWeb(self.config, token, self._own_secrets())
        reporter = SlackReporter(self._web, self._secrets)
        self.keeper = StatusKeeper(state.store, reporter, interval=self.config.update_interval)
        self.pending = PendingStarts(state.store, SOURCE, self._start_kept)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def signing_secret(self) -> str | None:
        """The app's signing secret (None: unset; every request is refused then)."""
        return os.environ.get(self.config.signing_secret_env) or None

    def _own_secrets(self) -> list[str]:
        """The app's signing secret and bot token."""
        token = os.environ.get(self.config.token_env)
        return [s for s in (self.signing_secret(), token) if s]

    def principal(self, user: str) -> Principal | None:
        """Whom ``user`` acts as, or None: golem does not know them."""
        return self.people.principal(user)

    def _store(self, principal: Principal | None) -> Store:
        return self.state.store.for_tenant(principal.tenant if principal else STRANGERS)

    @asynccontextmanager
    async def _one_at_a_time(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            yield

    # Mentions -------------------------------------------------------------------------

    async def mention(self, asked: Mention) -> SlackAnswer:
        """Start a run, or a follow-up, for a message that mentions golem (once)."""
        web = self._web()
        principal = self.principal(asked.user)
        store = self._store(principal)
        delivery = DeliveryRecord(source=SOURCE, ids=asked.ids)
        async with self._one_at_a_time(asked.thread):
            started = await store.deliveries.find(SOURCE, delivery.ids)
            if started is not None:
                return _duplicate(started)
            refused = await self.people.refusal(asked.user)
            if principal is None or refused is not None:
                return await self._refuse(store, delivery, asked, refused or "")
            ask = read_ask(asked.text, await web.bot_user())
            runs = await store.threads.runs_in(SOURCE, asked.thread)
            latest = await RunBook(store).load(runs[0].run_id) if runs else None
            if latest is not None and not latest.finished:
                return await self._queue(store, asked, latest.id)
            if latest is None and not ask.text and asked.thread_ts == asked.ts:
                return await self._refuse(store, delivery, asked, messages.nothing_asked())
            repo = self._repository(ask, asked.channel, latest)
            if not isinstance(repo, tuple):
                return await self._refuse(store, delivery, asked, repo)
            await web.react(asked.channel, asked.ts, self.config.reaction)
            return await self._start(principal, asked, ask, repo[1], latest)

    async def _queue(self, store: Store, asked: Mention, run_id: str) -> SlackAnswer:
        """Keep ``asked`` pending until ``run_id`` ends, and say so in the thread (once: a
        retry of the same event finds it kept)."""
        for waiting in await store.pending.in_thread(SOURCE, asked.thread):
            if waiting.person == asked.user and set(asked_again(waiting).ids) & set(asked.ids):
                return SlackAnswer(status="duplicate", reason="queued already", run_id=run_id)
        secrets = await self._secrets(store.tenant)
        await self.pending.keep(kept(asked, run_id, SecretMasker(secrets)), store)
        await self._web().post(
            asked.channel,
            messages.queued(asked.user, run_id),
            thread_ts=asked.thread_ts,
            secrets=secrets,
        )
        reason = f"run {run_id} goes on in the thread: the request is queued"
        return SlackAnswer(status="queued", reason=reason, run_id=run_id)

    async def _start_kept(self, pending: PendingRecord) -> None:
        """Start the request ``pending`` keeps (its run ended), claiming it as it starts;
        one that will never start (its person unknown now, refused, seen) is forgotten."""
        asked = asked_again(pending)
        principal = self.principal(asked.user)
        store = self.state.store.for_tenant(pending.tenant)
        if principal is None or principal.tenant != pending.tenant:
            await store.pending.drop(pending)
            return
        refused = await self.people.refusal(asked.user)
        if refused is not None:
            log.info("slack: %s's queued request is dropped: %s", asked.user, refused)
            await store.pending.drop(pending)
            return
        async with self._one_at_a_time(asked.thread):
            runs = await store.threads.runs_in(SOURCE, asked.thread)
            latest = await RunBook(store).load(runs[0].run_id) if runs else None
            if latest is not None and not latest.finished:  # another request's run
                await self.pending.wait_again(pending, latest.id, store)
                return
            ask = read_ask(asked.text, await self._web().bot_user())
            repo = self._repository(ask, asked.channel, latest)
            answer = (
                await self._start(principal, asked, ask, repo[1], latest, pending)
                if isinstance(repo, tuple)
                else None
            )
            if answer is None or answer.status != "started":
                await store.pending.drop(pending)

    def _repository(self, ask: Ask, channel: str, latest: RunState | None) -> tuple[str, str] | str:
        """The repository's name and URL a message asks for (the thread's run's, when it
        names none), or why there is none."""
        repos = self.config.repos
        names = sorted(repos)
        if ask.repo is not None:
            found = next((name for name in names if name.lower() == ask.repo.lower()), None)
            return (found, repos[found]) if found else messages.unknown_repository(ask.repo, names)
        if latest is not None:
            return ("", latest.request.repo)
        named = self.config.channels.get(channel) or (names[0] if len(names) == 1 else None)
        return (named, repos[named]) if named else messages.no_repository(names)

    async def _start(
        self,
        principal: Principal,
        asked: Mention,
        ask: Ask,
        repo: str,
        latest: RunState | None,
        pending: PendingRecord | None = None,
    ) -> SlackAnswer:
        web = self._web()
        secrets = await self._secrets(principal.tenant)
        masker = SecretMasker(secrets)
        thread = render_thread(
            await web.replies(asked.channel, asked.thread_ts, self.config.thread_messages),
            bot_user=await web.bot_user(),
            users=self.config.users,
            limit=self.config.thread_chars,
            mask=masker.mask_text,
        )
        weighed = self.state.config.server.trust.outsiders is not None and not thread.outsiders
        outsider = await self.people.outsider(thread.authors) if weighed else None
        outsiders = [*thread.outsiders, *([outsider] if outsider else [])]
        request = run_request(self.config, asked.user, ask, repo, latest, masker, thread.text)
        record = ThreadRecord(
            source=SOURCE, thread=asked.thread, detail=json.dumps({"user": asked.user})
        )
        delivery = DeliveryRecord(source=SOURCE, ids=asked.ids)
        try:
            run = await submit_from_source(
                self.state,
                principal,
                request,
                delivery=delivery,
                thread=record,
                outsider=f"outsiders wrote in the thread ({outsiders[0]})" if outsiders else None,
                pending=pending,
            )
        except DuplicateDelivery as twice:
            return _duplicate(twice.run_id)
        except PendingTaken as taken:  # another server started it first
            return SlackAnswer(status="duplicate", reason=taken.message)
        except GolemError as exc:  # full, refused by a policy, no backend for its tier
            if pending is not None and isinstance(exc, QueueFull):
                raise  # still pending: tried again when the queue has room
            store = self._store(principal)
            return await self._refuse(store, delivery, asked, messages.busy(exc.message))
        self.keeper.keep(record.model_copy(update={"run_id": run.id, "tenant": principal.tenant}))
        if pending is not None:
            answering = messages.answering(run.id, asked.user, pending.run_id)
            await web.post(asked.channel, answering, thread_ts=asked.thread_ts, secrets=secrets)
        why = "follow-up" if request.follow_up is not None else "run"
        said = f"; outsiders wrote in the thread ({outsiders[0]})" if outsiders else ""
        log.info("slack: %s %s for %s in %s%s", why, run.id, asked.user, asked.thread, said)
        return SlackAnswer(status="started", reason=f"{why} {run.id}", run_id=run.id)

    async def _refuse(
        self, store: Store, delivery: DeliveryRecord, asked: Mention, text: str
    ) -> SlackAnswer:
        """Tell the person who asked ``text``, privately, once per delivery."""
        if not await store.deliveries.handle_once(delivery):
            return SlackAnswer(status="duplicate", reason="answered already")
        tenant = store.tenant if store.tenant != STRANGERS else None
        await self._web().ephemeral(
            asked.channel,
            asked.user,
            text,
            thread_ts=_in_thread(asked),
            secrets=await self._secrets(tenant),
        )
        return SlackAnswer(status="refused", reason=text)

    # Slash commands -------------------------------------------------------------------

    async def command(self, asked: Command) -> str:
        """Start a run for ``/golem TEXT``, reported in a thread golem starts in the
        channel; what the person is told (privately, as the command's answer)."""
        principal = self.principal(asked.user)
        refused = await self.people.refusal(asked.user)
        if principal is None or refused is not None:
            return refused or ""
        store = self._store(principal)
        delivery = DeliveryRecord(source=SOURCE, ids=(asked.trigger_id,))
        async with self._one_at_a_time(asked.trigger_id):
            started = await store.deliveries.find(SOURCE, delivery.ids)
            if started is not None:
                return f"golem started run {started} for this already."
            ask = read_ask(asked.text, None)
            if not ask.text:
                return messages.nothing_asked()
            repo = self._repository(ask, asked.channel, None)
            if not isinstance(repo, tuple):
                return repo
            return await self._start_command(principal, asked, ask, repo[1], delivery)

    async def _start_command(
        self, principal: Principal, asked: Command, ask: Ask, repo: str, delivery: DeliveryRecord
    ) -> str:
        web = self._web()
        secrets = await self._secrets(principal.tenant)
        words = SecretMasker(secrets).mask_text(ask.text)
        root = await web.post(
            asked.channel,
            f"<@{asked.user}> asked golem: {mrkdwn.escape(words)}",
            secrets=secrets,
        )
        record = ThreadRecord(
            source=SOURCE,
            thread=f"{asked.team}:{asked.channel}:{root}",
            detail=json.dumps({"user": asked.user}),
        )
        task = f"{words}\n\nAsked in Slack with /golem by {asked.user}."
        request = RunRequest(
            repo=repo,
            task=task,
            blueprint=self.config.blueprint,
            model=self.config.model,
            forge=self.config.forge,
            budget_usd=self.config.budget_usd,
        )
        try:
            run = await submit_from_source(
                self.state, principal, request, delivery=delivery, thread=record
            )
        except DuplicateDelivery as twice:
            return f"golem started run {twice.run_id} for this already."
        except GolemError as exc:
            await web.post(
                asked.channel, messages.busy(exc.message), thread_ts=root, secrets=secrets
            )
            return messages.busy(exc.message)
        self.keeper.keep(record.model_copy(update={"run_id": run.id, "tenant": principal.tenant}))
        log.info("slack: run %s for /golem by %s in %s", run.id, asked.user, asked.channel)
        return f"golem started run {run.id}: follow it in the thread it started."

    # Buttons --------------------------------------------------------------------------

    async def act(self, action: Action) -> SlackAnswer:
        """Answer a run's gate, or cancel it, for a click on its status message."""
        principal = self.principal(action.user)
        store = self._store(principal)
        delivery = DeliveryRecord(source=SOURCE, ids=(action.trigger_id,))
        refused = await self.people.refusal(action.user)
        if principal is None or refused is not None:
            return await self._tell(store, delivery, action, refused or "")
        thread = await store.threads.of_run(SOURCE, action.run_id)
        if thread is not None and thread.status is None:  # posted by a server that stopped
            adopted = await self.keeper.adopt(thread)
            thread = thread.model_copy(update={"status": adopted})
        if thread is None or not _shown_in(thread, action):
            return await self._tell(
                store, delivery, action, "That button is not on a run of yours: nothing was done."
            )
        book = RunBook(store)
        try:
            if action.ask == "cancel":
                await cancel_run(book, action.run_id)
            else:
                await decide_gate(book, action.run_id, action.ask)
        except RunConflict as exc:
            return await self._tell(store, delivery, action, exc.message)
        log.info("slack: %s %s by %s", action.ask, action.run_id, action.user)
        return SlackAnswer(
            status="ok", reason=f"{action.ask}: {action.run_id}", run_id=action.run_id
        )

    async def _tell(
        self, store: Store, delivery: DeliveryRecord, action: Action, text: str
    ) -> SlackAnswer:
        if not await store.deliveries.handle_once(delivery):
            return SlackAnswer(status="duplicate", reason="answered already")
        tenant = store.tenant if store.tenant != STRANGERS else None
        await self._web().ephemeral(
            action.channel, action.user, text, secrets=await self._secrets(tenant)
        )
        return SlackAnswer(status="refused", reason=text)

    # Plumbing -------------------------------------------------------------------------

    def _web(self) -> SlackWeb:
        if self.web is None:
            raise GolemError(
                f"golem has no Slack bot token: set ${self.config.token_env} "
                "([server.slack] token_env) and restart golem serve"
            )
        return self.web

    async def _secrets(self, tenant: str | None) -> list[str]:
        return await known_secrets(self.state, tenant, self._own_secrets())

    def follow_previous(self) -> None:
        """Go on with the runs a previous server left unreported (with a token only)."""
        if self.web is not None and self.signing_secret() is not None:
            self.keeper.recover_later()
            self.pending.resume_later()

    async def close(self) -> None:
        """Stop keeping the status messages (a restarted server goes on)."""
        await self.keeper.close()
        await self.pending.close()


def _duplicate(run_id: str) -> SlackAnswer:
    reason = f"this delivery started run {run_id} already: a duplicate starts nothing"
    return SlackAnswer(status="duplicate", reason=reason, run_id=run_id)


def _in_thread(asked: Mention) -> str | None:
    return asked.thread_ts if asked.thread_ts != asked.ts else None


def _shown_in(thread: ThreadRecord, action: Action) -> bool:
    """Whether the clicked message is the run's status message, in its channel."""
    channel, _ = place(thread)
    return channel == action.channel and thread.status == action.message_ts
