"""Configuration of golem's Slack app (``[server.slack]`` in golem.toml): where Slack's
Web API is, which variables hold the app's secrets, who may start runs (Slack users mapped
to golem tenants and roles), which repositories a message may name, and what the runs
it starts are."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from golem.core.people_config import PeopleRule

__all__ = [
    "SLACK_CHANNEL",
    "SLACK_GROUP",
    "SLACK_TEAM",
    "SLACK_USER",
    "SlackConfig",
    "SlackUser",
]

SLACK_USER = re.compile(r"[UW][A-Z0-9]{2,20}")
"""A Slack user's id (``U…``, or ``W…`` on an Enterprise Grid)."""
SLACK_CHANNEL = re.compile(r"[CGD][A-Z0-9]{2,20}")
"""A Slack conversation's id: a channel (``C…``), a private one (``G…``), a DM (``D…``)."""
SLACK_GROUP = re.compile(r"S[A-Z0-9]{2,20}")
"""A Slack user group's id (``S…``)."""
SLACK_TEAM = re.compile(r"[TE][A-Z0-9]{2,20}")
"""A Slack workspace's id (``T…``), or an Enterprise Grid's (``E…``)."""
REPOSITORY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
"""What ``repo:`` in a message may say: a name of ``[server.slack] repos``."""
TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class SlackUser(BaseModel):
    """Whom a Slack user starts runs as: a golem tenant, and a role whose policy
    (``server.policies.<role>``) their runs are held to, as an API key of that role."""

    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(description="The tenant their runs belong to.")
    role: Literal["user", "trusted", "admin"] = Field(
        "user", description="The role whose policy their runs are held to."
    )

    @field_validator("tenant")
    @classmethod
    def _tenant_name(cls, tenant: str) -> str:
        if not TENANT.fullmatch(tenant):
            raise ValueError(f"{tenant!r} is not a tenant's name (letters, digits, . _ -)")
        return tenant


class SlackConfig(BaseModel):
    """``[server.slack]``: runs started from Slack (a mention of golem's app, ``/golem``),
    reported in the thread they were asked in. Only requests signed with the app's signing
    secret are read; without it, none is."""

    model_config = ConfigDict(extra="forbid")

    signing_secret_env: str = Field(
        "GOLEM_SLACK_SIGNING_SECRET",
        description="Variable holding the app's signing secret; unset: Slack's requests are "
        "all refused.",
    )
    token_env: str = Field(
        "GOLEM_SLACK_BOT_TOKEN", description="Variable holding the app's bot token (xoxb-)."
    )
    api_url: str = Field(
        "https://slack.com/api/", description="Slack's Web API (the SDK's base_url)."
    )
    team: str | None = Field(
        None, description="The workspace's id (T…): requests from any other are ignored."
    )
    users: dict[str, SlackUser] = Field(
        default_factory=dict,
        description="Who may start runs: Slack user ids (U…) to a tenant and role. Anyone "
        "else is told once, privately, that they may not.",
    )
    people: PeopleRule = Field(
        default_factory=PeopleRule,
        description="Which of the users named in users may ask, by their Slack record "
        "(users.info): bots, deactivated accounts and users of other workspaces never; "
        "guests only with guests = true; allow: only these user (U…) or user group (S…) ids.",
    )
    repos: dict[str, str] = Field(
        default_factory=dict,
        description="Repositories a run may work on: a name (what `repo: NAME` in a message "
        "says) to the git URL (or path) the run clones.",
    )
    channels: dict[str, str] = Field(
        default_factory=dict,
        description="A channel's repository (channel id C… to a name of repos), for "
        "messages that name none.",
    )
    forge: Literal["github", "gitlab", "local"] | None = Field(
        None, description="Where the runs' pull requests go; default: [forge] provider."
    )
    blueprint: str = Field("minion", description="Blueprint of the runs a message starts.")
    follow_up_blueprint: str = Field(
        "follow-up",
        description="Blueprint of the runs a later mention in the same thread starts on the "
        "pull request of the thread's run.",
    )
    model: str | None = Field(None, description="Their model; default: [models] default.")
    budget_usd: float | None = Field(
        None, gt=0, description="Dollars each run may spend; default: the blueprint's."
    )
    reaction: str = Field(
        "eyes",
        pattern=r"^[a-z0-9_+-]{1,64}$",
        description="The emoji golem reacts with to a request it takes (its name, no colons).",
    )
    update_interval: float = Field(
        2.0,
        ge=0,
        description="Least seconds between two edits of a run's status message (Slack "
        "allows about one chat.update a second per channel).",
    )
    thread_messages: int = Field(
        200, ge=1, le=1000, description="Most messages of a thread a run reads as its task."
    )
    thread_chars: int = Field(
        40_000,
        ge=1000,
        description="Most characters of a thread a run reads as its task (the newest kept).",
    )

    @field_validator("users")
    @classmethod
    def _user_ids(cls, users: dict[str, SlackUser]) -> dict[str, SlackUser]:
        wrong = [user for user in users if not SLACK_USER.fullmatch(user)]
        if wrong:
            raise ValueError(f"not Slack user ids (U… or W…): {', '.join(map(repr, wrong))}")
        return users

    @field_validator("people")
    @classmethod
    def _allowed_ids(cls, people: PeopleRule) -> PeopleRule:
        wrong = [
            one
            for one in people.allow
            if not (SLACK_USER.fullmatch(one) or SLACK_GROUP.fullmatch(one))
        ]
        if wrong:
            raise ValueError(
                f"people.allow: not Slack user (U…, W…) or user group (S…) ids: "
                f"{', '.join(map(repr, wrong))}"
            )
        return people

    @field_validator("repos")
    @classmethod
    def _repository_names(cls, repos: dict[str, str]) -> dict[str, str]:
        wrong = [name for name in repos if not REPOSITORY_NAME.fullmatch(name)]
        if wrong:
            raise ValueError(
                f"repository names are letters, digits, . _ / -: {', '.join(map(repr, wrong))}"
            )
        return repos

    @field_validator("team")
    @classmethod
    def _team_id(cls, team: str | None) -> str | None:
        if team is not None and not SLACK_TEAM.fullmatch(team):
            raise ValueError(f"{team!r} is not a Slack workspace id (T…)")
        return team

    @model_validator(mode="after")
    def _channels_name_repos(self) -> SlackConfig:
        wrong = [c for c in self.channels if not SLACK_CHANNEL.fullmatch(c)]
        if wrong:
            raise ValueError(f"not Slack channel ids (C…): {', '.join(map(repr, wrong))}")
        unknown = sorted({repo for repo in self.channels.values() if repo not in self.repos})
        if unknown:
            raise ValueError(
                f"channels name repositories that are not in server.slack.repos: "
                f"{', '.join(map(repr, unknown))}"
            )
        return self
