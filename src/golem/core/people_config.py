"""Who of a chat or tracker workspace may start runs (``[server.slack.people]``,
``[server.linear.people]``): judged by each person's own record there (Slack's
``users.info``, Linear's ``user``), never by what a request says of them. One rule for
both sources; each adds what only it has."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LinearPeople", "PeopleRule"]


class PeopleRule(BaseModel):
    """Who may start runs, by their record in the workspace: an active full member (never a
    bot, an app, a deactivated account, or someone of another workspace); guests only when
    ``guests`` says so; and, when ``allow`` names anyone, only those it names."""

    model_config = ConfigDict(extra="forbid")

    guests: bool = Field(
        False,
        description="Whether the workspace's guests may start runs (Slack's single- and "
        "multi-channel guests, Linear's guest users).",
    )
    allow: list[str] = Field(
        default_factory=list,
        description="When not empty, only these may start runs: user ids, and groups whose "
        "members may (Slack: user group ids, S…; Linear: team keys, ENG).",
    )
    record_ttl: float = Field(
        300.0,
        ge=0,
        le=86_400,
        description="Seconds a person's record (and a group's members) read from the "
        "workspace is trusted before it is read again.",
    )
    records: int = Field(
        1000, ge=1, le=100_000, description="Most people's records (and groups) kept at once."
    )


class LinearPeople(PeopleRule):
    """``[server.linear.people]``: Linear's people rule, with its teams."""

    team_members: bool = Field(
        True,
        description="Whether only members of the issue's team may start runs on it (a "
        "workspace member of another team may not).",
    )
