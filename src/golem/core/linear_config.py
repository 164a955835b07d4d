"""Linear (``[server.linear]``): the webhook golem serve takes Linear's deliveries on, the
API it answers through, which issues start runs, and on which repository."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from golem.core.people_config import LinearPeople

__all__ = ["LinearConfig", "LinearStart"]

LinearStart = Literal["assigned", "labelled", "mentioned"]
ALLOWED = re.compile(r"[A-Za-z0-9-]{1,64}")
"""What ``people.allow`` names: a user's id (a UUID) or a team's key (ENG)."""


def _starts() -> list[LinearStart]:
    return ["assigned", "labelled", "mentioned"]


class LinearConfig(BaseModel):
    """``[server.linear]``: runs started from Linear issues (docs/linear.md)."""

    model_config = ConfigDict(extra="forbid")

    secret_env: str = Field(
        "GOLEM_LINEAR_WEBHOOK_SECRET",
        description="Variable holding the webhook's signing secret; unset: the endpoint "
        "refuses every delivery.",
    )
    token_env: str = Field(
        "GOLEM_LINEAR_TOKEN",
        description="Variable holding the token golem calls Linear's API with: a personal "
        "API key, or an OAuth app's access token (token_kind).",
    )
    token_kind: Literal["api_key", "oauth"] = Field(
        "api_key",
        description="api_key: sent as it is (Authorization: <key>); oauth: an OAuth "
        "access token (Authorization: Bearer <token>), an agent app's (actor=app).",
    )
    api_url: str = Field("https://api.linear.app/graphql", description="Linear's GraphQL endpoint.")
    tenant: str = Field("default", description="Tenant that owns the runs it starts.")
    start_on: list[LinearStart] = Field(
        default_factory=_starts,
        description="What starts a run: an issue assigned (or delegated) to golem's user "
        "(assigned), given the label (labelled), a new comment mentioning the handle "
        "(mentioned).",
    )
    label: str = Field("golem", description="An issue given this label starts a run.")
    handle: str = Field("@golem", description="A comment mentioning this starts a run.")
    user_id: str | None = Field(
        None,
        description="golem's user in Linear (its id): issues assigned to it start runs, its "
        "own comments never do; None: the token's own user (viewer).",
    )
    review_state: str = Field(
        "In Review",
        description="The workflow state (its name) an issue moves to once its pull request "
        "is open; a team without it keeps its state. In progress is the team's first "
        "state of type started.",
    )
    replay_window: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="Seconds a delivery's webhookTimestamp may lie from this server's clock; "
        "older (or later) ones are refused as replays.",
    )
    teams: dict[str, str] = Field(
        default_factory=dict,
        description="Repository (git URL) of each team's issues, by the team's key (ENG).",
    )
    projects: dict[str, str] = Field(
        default_factory=dict,
        description="Repository of each project's issues, by the project's name or id; it "
        "wins over the team's.",
    )
    repo: str | None = Field(
        None,
        description="Repository of the issues no team or project names; None: the only "
        "repository teams and projects name, if they name one.",
    )
    people: LinearPeople = Field(
        default_factory=LinearPeople,
        description="Who may start runs, by their Linear user (never an app user or a "
        "deactivated one; guests only with guests = true; by default members of the "
        "issue's team only; allow: only these user ids or team keys).",
    )
    blueprint: str = Field("minion", description="Blueprint of its runs.")
    follow_up_blueprint: str = Field(
        "follow-up",
        description="Blueprint of a run a comment mentioning golem starts once the issue's "
        "last run opened a pull request: it pushes to that pull request's branch.",
    )
    model: str | None = Field(None, description="Their model; default: [models] default.")
    budget_usd: float | None = Field(None, gt=0, description="Dollars one run may spend.")
    agent_activities: bool = Field(
        True,
        description="Where a delivery belongs to a Linear agent session (the app is an "
        "agent), report through the session's activities as well as comments.",
    )
    update_interval: float = Field(
        5.0,
        ge=0,
        description="Least seconds between two edits of a run's status comment (Linear "
        "allows an API key about 1,500 requests an hour).",
    )

    @field_validator("people")
    @classmethod
    def _allowed_names(cls, people: LinearPeople) -> LinearPeople:
        wrong = [one for one in people.allow if not ALLOWED.fullmatch(one)]
        if wrong:
            raise ValueError(
                f"people.allow: not Linear user ids or team keys: {', '.join(map(repr, wrong))}"
            )
        return people

    @model_validator(mode="after")
    def _something_starts(self) -> LinearConfig:
        if not self.start_on:
            raise ValueError(
                "server.linear.start_on: name at least one of assigned, labelled, mentioned"
            )
        return self

    def repository_for(self, team: str, project: str | None, project_id: str | None) -> str | None:
        """The repository of an issue of ``team`` (its key) in ``project`` (its name and
        id), or None when the configuration names none for it."""
        for name in (project_id, project):
            if name and name in self.projects:
                return self.projects[name]
        if team in self.teams:
            return self.teams[team]
        if self.repo is not None:
            return self.repo
        named = set(self.teams.values()) | set(self.projects.values())
        return named.pop() if len(named) == 1 else None
