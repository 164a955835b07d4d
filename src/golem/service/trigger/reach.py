"""How a trigger reaches its forge, and its tenant's runs: the forge with the tenant's
token, the account golem comments as, the discussion of an issue or a pull request, and
the run a mark names (if it is really that discussion's)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

from golem.blueprint import RunState
from golem.blueprint.book import RunBook
from golem.core.errors import ForgeAuthError, ForgeError, ForgeNotFound, GolemError, Problem
from golem.core.server_config import TriggerConfig
from golem.forge import Forge, Issue, IssueComment, PullRequest, ReviewDiscussion, make_forge
from golem.service.state import ServerState
from golem.service.trigger.calls import Call, IssueCall, ReviewCall

__all__ = ["READ_TIMEOUT", "ForgeReach"]

log = logging.getLogger("golem.service.trigger")
READ_TIMEOUT = 8.0  # seconds to read the forge while a webhook waits for our answer (10)
T = TypeVar("T")
NAMES = {"github": "GitHub", "gitlab": "GitLab"}


class ForgeReach:
    """One forge as a trigger's tenant reaches it."""

    def __init__(
        self, state: ServerState, provider: str, config: TriggerConfig, forge: Forge | None
    ) -> None:
        self.state = state
        self.provider = provider
        self.config = config
        self.title = NAMES.get(provider, provider)
        self._forge = forge
        self._login: str | None = None

    @property
    def book(self) -> RunBook:
        """The runs of the tenant the trigger's runs belong to."""
        return RunBook(self.state.store.for_tenant(self.config.tenant))

    def secret(self) -> str | None:
        """The webhook's secret, from the variable ``secret_env`` names (None: unset)."""
        return os.environ.get(self.config.secret_env) or None

    async def forge(self) -> Forge:
        """The forge with the trigger's tenant's token: its own, or the server's where
        ``server.shared_forge_tenants`` allows (503 when it has none)."""
        if self._forge is not None:
            return self._forge
        try:
            credentials = await self.state.forge_access.require(
                self.config.tenant, self.provider, f"the {self.title} trigger"
            )
        except GolemError as exc:
            raise Problem(
                503, f"{exc.message}; no run was started: redeliver once it has one"
            ) from exc
        return make_forge(self.provider, self.state.config.forge, credentials=credentials)

    async def own_login(self) -> str | None:
        """The account golem comments as (its token's), or None when the forge will not say
        (an app's installation token: its comments are a bot's, ignored as such)."""
        if self._login is None:
            try:
                async with asyncio.timeout(READ_TIMEOUT):
                    user = await _whoami(await self.forge())
            except (ForgeAuthError, ForgeNotFound) as exc:  # it will not say: no use asking
                log.info("%s trigger: the token's account is unknown: %s", self.title, exc)
                self._login = ""
            except (ForgeError, TimeoutError) as exc:
                log.warning("%s trigger: the token's account is unknown now: %s", self.title, exc)
                return None
            else:
                self._login = user
        return self._login or None

    def clone_url(self, repo: str) -> str:
        """How the trigger's runs clone ``repo``."""
        template = self.config.repo_url or self._default_repo_url()
        try:
            return template.format(repo=repo)
        except (KeyError, IndexError, ValueError) as exc:
            raise Problem(
                500,
                f"server.{self.provider}.repo_url {template!r} is not a template with {{repo}} "
                "alone: fix golem.toml",
            ) from exc

    def _default_repo_url(self) -> str:
        base = getattr(getattr(self.state.config.forge, self.provider, None), "base_url", None)
        return f"{str(base).rstrip('/')}/{{repo}}.git" if base else "https://github.com/{repo}.git"

    async def read_issue(self, ref: str) -> Issue:
        """The issue with its comments (502 when the forge does not answer)."""
        return await self._read(ref, lambda forge: forge.fetch_issue(ref))

    async def read_pull(self, repo: str, number: int) -> PullRequest:
        """The pull (merge) request (502 when the forge does not answer)."""
        ref = f"{repo}!{number}"
        return await self._read(ref, lambda forge: forge.fetch_pull_request(repo, number))

    async def conversation(self, call: Call, pr: PullRequest | None = None) -> list[IssueComment]:
        """The comments of the issue, or of the pull request's conversation (``pr``: the
        pull request, when read already)."""
        if isinstance(call, IssueCall):
            return (await self.read_issue(call.ref)).comments
        return (await self.discussion(call, pr)).comments

    async def discussion(self, call: ReviewCall, pr: PullRequest | None = None) -> ReviewDiscussion:
        """The pull request's whole review: its conversation, reviews and threads (``pr``:
        the pull request, when read already)."""
        read = pr or await self.read_pull(call.repo, call.number)
        return await self._read(call.key, lambda forge: forge.review_discussion(read))

    async def _read(self, ref: str, read: Callable[[Forge], Awaitable[T]]) -> T:
        try:
            forge = await self.forge()
            async with asyncio.timeout(READ_TIMEOUT):
                return await read(forge)
        except (ForgeError, TimeoutError) as exc:
            why = exc.message if isinstance(exc, ForgeError) else f"no answer in {READ_TIMEOUT}s"
            raise Problem(
                502,
                f"golem could not read {ref} on {self.title} ({why}); no run was started: fix "
                f"[forge.{self.provider}] or the token, then redeliver this delivery",
            ) from exc

    async def run_for(self, call: Call, run_id: str) -> RunState | None:
        """The tenant's run ``run_id`` if it is for ``call``'s issue or pull request (a
        discussion is anyone's to write: a mark counts only for a run of that one)."""
        run = await self.book.load(run_id)
        if run is None or run.request.forge != self.provider:
            return None
        if isinstance(call, IssueCall):
            return run if run.request.issue == call.ref else None
        asked = run.request.follow_up
        if asked is not None and (asked.repo, asked.number) == (call.repo, call.number):
            return run
        return None

    async def say(self, call: Call, text: str) -> None:
        """Comment ``text`` on the issue or pull request (a failure is logged)."""
        try:
            await (await self.forge()).comment(call.target(), text)
        except GolemError as exc:  # a ForgeError, or no token (Problem)
            log.warning("%s trigger: could not comment on %s: %s", self.title, call.key, exc)

    async def secrets(self) -> list[str]:
        """Every token a report could show: the tenant's, and the server's."""
        section = getattr(self.state.config.forge, self.provider, None)
        server = section.token() if section is not None and hasattr(section, "token") else None
        try:
            own = (await self.state.forge_access.for_tenant(self.config.tenant)).secrets()
        except GolemError:
            own = []
        return [*own, server] if server else own


async def _whoami(forge: Forge) -> str:
    """The login (GitHub) or username (GitLab) of the forge's token, from ``GET /user``."""
    api = getattr(forge, "api", None)
    call = getattr(api, "call", None)
    if call is None:
        return ""
    user = await call("GET", "/user", "the account of golem's token")
    if not isinstance(user, dict):
        return ""
    return str(user.get("login") or user.get("username") or "")
