"""Who may ask golem on Slack, by their own record in the workspace (``users.info``), not by
what a request says of them: a person ``[server.slack] users`` names must also be a full,
active member of the workspace golem is installed in. Bots and apps, deactivated accounts
and users of another workspace (Slack Connect: their ``team_id`` is not the installation's,
nor their Enterprise Grid organisation its) never start runs nor press buttons; guests
(single- and multi-channel: ``is_ultra_restricted``, ``is_restricted``) only with
``[server.slack.people] guests``; and when ``allow`` names anyone, only the users it names
or the members of the user groups it names. Records and groups are kept for ``record_ttl``
seconds (``RecordCache``); when Slack cannot say who someone is, golem refuses (fails
closed) and says how to go on. The same rule names a thread's outsiders: a person golem
knows whose record would refuse them makes the run an outsider's, as a stranger does."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from golem.core.errors import SlackError
from golem.core.people_config import PeopleRule
from golem.core.slack_config import SLACK_GROUP, SlackConfig
from golem.service.keys import Principal
from golem.service.slack import messages
from golem.service.sources import RecordCache

if TYPE_CHECKING:
    from golem.service.slack.web import SlackWeb

__all__ = ["MAX_AUTHORS", "SlackPeople", "SlackPerson", "refusal"]

SLACKBOT = "USLACKBOT"
MAX_AUTHORS = 20
"""Most people of a thread whose records golem reads; a thread of more has outsiders."""


@dataclass(frozen=True)
class SlackPerson:
    """What golem weighs of a user's Slack record."""

    id: str
    team: str | None
    enterprise: str | None
    deleted: bool
    bot: bool
    guest: bool
    stranger: bool

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> SlackPerson:
        """The person a ``users.info`` record describes (a flag it leaves out is false)."""
        grid = record.get("enterprise_user")
        enterprise = grid.get("enterprise_id") if isinstance(grid, Mapping) else None
        team = record.get("team_id")
        return cls(
            id=str(record.get("id") or ""),
            team=team if isinstance(team, str) and team else None,
            enterprise=enterprise if isinstance(enterprise, str) and enterprise else None,
            deleted=record.get("deleted") is True,
            bot=record.get("is_bot") is True
            or record.get("is_app_user") is True
            or record.get("id") == SLACKBOT,
            guest=record.get("is_restricted") is True or record.get("is_ultra_restricted") is True,
            stranger=record.get("is_stranger") is True,
        )


def refusal(
    person: SlackPerson, rule: PeopleRule, home: tuple[str | None, str | None]
) -> str | None:
    """Why ``person`` may not ask golem, installed in ``home`` (its workspace and Grid
    organisation), whatever ``allow`` says (None: they may, so far)."""
    team, enterprise = home
    if person.deleted:
        return "your Slack account is deactivated: golem takes no requests from it."
    if person.bot:
        return "bots and apps start no runs: a person of the workspace must ask golem."
    same_grid = enterprise is not None and person.enterprise == enterprise
    if person.stranger or (person.team != team and not same_grid):
        return (
            "you are a user of another workspace (Slack Connect): golem takes requests only "
            "from its own workspace's members. Ask one of them to ask golem for you."
        )
    if person.guest and not rule.guests:
        return (
            "guests of the workspace start no runs ([server.slack.people] guests). Ask a "
            "member of the workspace to ask golem for you."
        )
    return None


class SlackPeople:
    """Who may ask one server's Slack app: the people ``[server.slack] users`` names, as
    their records (kept a while) let them. ``web`` is the Web API (SlackError: no token)."""

    def __init__(self, config: SlackConfig, web: Callable[[], SlackWeb]) -> None:
        self.config = config
        self.rule = config.people
        self._web = web
        self._people: RecordCache[SlackPerson] = RecordCache(
            self.rule.record_ttl, self.rule.records
        )
        self._groups: RecordCache[frozenset[str]] = RecordCache(
            self.rule.record_ttl, self.rule.records
        )

    @property
    def web(self) -> SlackWeb:
        return self._web()

    def principal(self, user: str) -> Principal | None:
        """Whom ``user`` acts as, or None: golem does not know them."""
        known = self.config.users.get(user)
        if known is None:
            return None
        return Principal(tenant=known.tenant, role=known.role, key_id=f"slack:{user}")

    async def refusal(self, user: str) -> str | None:
        """What ``user`` is told when they may not ask (None: they may): golem does not
        know them, or their Slack record does not let them."""
        if user not in self.config.users:
            return messages.stranger(user)
        why = await self._record_refusal(user)
        return None if why is None else messages.refused(user, why)

    async def outsider(self, authors: Iterable[str]) -> str | None:
        """Who of a thread's ``authors`` (golem's own left out) may not ask, and why (None:
        every one of them may)."""
        people = sorted(set(authors))
        if len(people) > MAX_AUTHORS:
            return f"{len(people)} people wrote in the thread (golem asks about {MAX_AUTHORS})"
        for person in people:
            why = await self.refusal(person)
            if why is not None:
                return f"{person}: {why}"
        return None

    async def _record_refusal(self, user: str) -> str | None:
        """Why ``user``'s record does not let them ask golem (None: it does). Fails closed:
        when Slack cannot say who they are, the answer says so and what to do."""
        try:
            person = await self._people.get(user, lambda: self._read(user))
            why = refusal(person, self.rule, await self.web.installation())
            if why is None and self.rule.allow and not await self._allowed(user):
                why = (
                    "golem takes requests only from the people and user groups its operators "
                    "allow ([server.slack.people] allow). Ask one of them to add you."
                )
        except SlackError as exc:
            if exc.error in ("user_not_found", "user_not_visible"):
                return "Slack knows no such user in golem's workspace: golem started nothing."
            return (
                f"golem could not check who you are on Slack ({exc.message}), so it started "
                "nothing: ask golem again in a minute. If this goes on, golem's operators "
                "should check that its app has the users:read and usergroups:read scopes."
            )
        return why

    async def _read(self, user: str) -> SlackPerson:
        person = SlackPerson.of(await self.web.user(user))
        if person.id != user:
            raise SlackError(f"users.info answered for {person.id!r}, not {user!r}")
        return person

    async def _allowed(self, user: str) -> bool:
        if user in self.rule.allow:
            return True
        for group in self.rule.allow:
            if SLACK_GROUP.fullmatch(group) and user in await self._members(group):
                return True
        return False

    async def _members(self, group: str) -> frozenset[str]:
        return await self._groups.get(group, functools.partial(self.web.group_members, group))
