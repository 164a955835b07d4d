"""Who may ask golem on Linear, by their own user in the workspace (Linear's ``user``), not
by what a delivery says of them: an active person (an unknown user, a deactivated one, an
app user never start runs), no guest unless ``[server.linear.people] guests``, a member of
the issue's team (``team_members``), and, when ``allow`` names anyone, one it names by
their id or by a team of theirs. Users are kept for ``record_ttl`` seconds
(``RecordCache``). The same rule tells who is an outsider of an issue (its creator or a
commenter who may not ask): a run on such an issue gets ``server.trust.outsiders``."""

from __future__ import annotations

import functools

from golem.core.errors import TrackerError
from golem.core.people_config import LinearPeople
from golem.service.linear.client import LinearClient, LinearIssue, LinearUser
from golem.service.sources import RecordCache

__all__ = ["MAX_PEOPLE", "LinearMembers", "refusal"]

MAX_PEOPLE = 20
"""Most authors of an issue golem asks Linear about; an issue with more has outsiders."""


def refusal(
    user: LinearUser | None, user_id: str, issue: LinearIssue, rule: LinearPeople
) -> str | None:
    """Why ``user`` (None: Linear knows no ``user_id``) may not start a run on ``issue``
    (None: they may)."""
    if user is None:
        return f"Linear knows no user {user_id}: an unknown user starts no runs"
    who = user.name or user_id
    if not user.active:
        return f"{who} is not an active member: no run"
    if user.app:
        return f"{who} is an app user (an agent or integration), not a person: no run"
    if user.guest and not rule.guests:
        return f"{who} is a guest of the workspace: guests start no runs (server.linear.people)"
    return _not_member(user, who, issue.team.key, rule)


def _not_member(user: LinearUser, who: str, team: str, rule: LinearPeople) -> str | None:
    """Why ``user`` is not one of the people of ``team`` (its key) or of ``allow``."""
    keys = {one.key for one in user.teams}
    if rule.team_members and team not in keys:
        return f"{who} is not a member of team {team}, whose issue this is: no run"
    if rule.allow and user.id not in rule.allow and not keys & set(rule.allow):
        return f"{who} is not one server.linear.people.allow names (by id or team): no run"
    return None


class LinearMembers:
    """The people rule of one server's Linear trigger, with users kept a while."""

    def __init__(self, client: LinearClient, rule: LinearPeople) -> None:
        self.client = client
        self.rule = rule
        self._users: RecordCache[LinearUser | None] = RecordCache(rule.record_ttl, rule.records)

    async def refusal(self, user_id: str, issue: LinearIssue) -> str | None:
        """Why ``user_id`` may not start a run on ``issue`` (None: they may); TrackerError
        when Linear cannot say who they are (no run starts then either)."""
        user = await self._users.get(user_id, functools.partial(self.client.user, user_id))
        return refusal(user, user_id, issue, self.rule)

    async def outsider(self, issue: LinearIssue, own: str | None) -> str | None:
        """Why someone who wrote on ``issue`` (its creator, a commenter; golem's user
        ``own`` left out) may not ask golem (None: every one of them may). Not knowing is
        an outsider too: a comment of no user (an integration's), Linear not answering."""
        authors = [comment.user for comment in issue.comments] + [issue.creator]
        if any(author is None for author in authors[:-1]):
            return "a comment on the issue is by no user of the workspace (an integration's)"
        people = sorted({a.id for a in authors if a is not None and a.id != own})
        if len(people) > MAX_PEOPLE:
            return f"{len(people)} people wrote on the issue (golem asks about {MAX_PEOPLE})"
        for person in people:
            try:
                why = await self.refusal(person, issue)
            except TrackerError as exc:
                return f"Linear would not say who {person} is: {exc.message}"
            if why is not None:
                return why
        return None
