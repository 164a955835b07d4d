"""Linear's GraphQL API, as golem uses it (httpx): the issue a run works on (title,
description, labels, comments), the workflow states it moves between, the comments and
agent-session activities golem reports with, and who a user is. Every string Linear
answers is cleaned (``golem.core.ansi``) where it enters; the token is read from its
variable for each request and goes to the configured endpoint only."""

from __future__ import annotations

import os
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from golem.core.ansi import clean_json
from golem.core.errors import TrackerError
from golem.core.linear_config import LinearConfig

__all__ = [
    "ActivityKind",
    "LinearClient",
    "LinearComment",
    "LinearIssue",
    "LinearUser",
    "SessionThought",
    "WorkflowState",
]

M = TypeVar("M", bound=BaseModel)
TIMEOUT = 8.0  # seconds: a delivery waits for some of these answers (Linear waits 5)
ActivityKind = Literal["thought", "action", "response", "error", "elicitation"]

VIEWER = "query Viewer { viewer { id name } }"
USER = """query User($id: String!) {
  user(id: $id) { id name active guest app teams(first: 250) { nodes { id key name } } }
}"""
ISSUE = """query Issue($id: String!) {
  issue(id: $id) {
    id identifier title description url
    team { id key name }
    project { id name }
    state { id name type }
    assignee { id name }
    creator { id name }
    labels { nodes { id name } }
    comments(first: 100) {
      nodes { id body createdAt user { id name } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
COMMENTS = """query IssueComments($id: String!, $after: String) {
  issue(id: $id) {
    comments(first: 100, after: $after) {
      nodes { id body createdAt user { id name } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
COMMENT_PAGES = 50
"""Most pages of an issue's comments read (100 each): an issue of more is read in part."""
STATES = """query WorkflowStates($team: ID!) {
  workflowStates(filter: { team: { id: { eq: $team } } }) { nodes { id name type position } }
}"""
COMMENT = """mutation CommentCreate($input: CommentCreateInput!) {
  commentCreate(input: $input) { success comment { id } }
}"""
EDIT = """mutation CommentUpdate($id: String!, $input: CommentUpdateInput!) {
  commentUpdate(id: $id, input: $input) { success comment { id } }
}"""
MOVE = """mutation IssueUpdate($id: String!, $input: IssueUpdateInput!) {
  issueUpdate(id: $id, input: $input) { success }
}"""
ACTIVITY = """mutation AgentActivityCreate($input: AgentActivityCreateInput!) {
  agentActivityCreate(input: $input) { success agentActivity { id } }
}"""
SESSION = """query AgentSession($id: String!) {
  agentSession(id: $id) {
    activities(first: 250) {
      nodes { id ephemeral content { ... on AgentActivityThoughtContent { body } } }
    }
  }
}"""


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Named(_Answer):
    id: str
    name: str = ""
    key: str = ""
    type: str = ""


class LinearUser(_Answer):
    """A user of the workspace: whether they are active, a guest, an app (an agent or
    integration acting as a user), and the teams they are a member of (when asked)."""

    id: str
    name: str = ""
    active: bool = True
    guest: bool = False
    app: bool = False
    teams: list[_Named] = Field(default_factory=list)

    @field_validator("teams", mode="before")
    @classmethod
    def _nodes(cls, value: object) -> object:
        """A connection (``{nodes: [...]}``) is its nodes."""
        return value.get("nodes") or [] if isinstance(value, dict) else value


class LinearComment(_Answer):
    """A comment of an issue."""

    id: str
    body: str = ""
    created: str | None = Field(None, alias="createdAt")
    user: LinearUser | None = None


class SessionThought(_Answer):
    """A thought an agent session shows."""

    id: str
    body: str


class WorkflowState(_Answer):
    """A state of a team's workflow (type: triage, backlog, unstarted, started,
    completed, canceled)."""

    id: str
    name: str
    type: str
    position: float = 0.0


class LinearIssue(_Answer):
    """An issue, with what a run's task needs."""

    id: str
    identifier: str
    title: str
    description: str | None = None
    url: str | None = None
    team: _Named
    project: _Named | None = None
    state: _Named | None = None
    assignee: LinearUser | None = None
    creator: LinearUser | None = None
    labels: list[_Named] = Field(default_factory=list)
    comments: list[LinearComment] = Field(default_factory=list)


class LinearClient:
    """Linear's API with the token ``[server.linear]`` names."""

    def __init__(self, config: LinearConfig, transport: httpx.AsyncBaseTransport | None = None):
        self.config = config
        self._transport = transport

    def token(self) -> str | None:
        """The token, read from its variable now (None: unset)."""
        return os.environ.get(self.config.token_env) or None

    async def call(self, name: str, document: str, variables: dict[str, Any]) -> dict[str, Any]:
        """The ``data`` of operation ``name`` (TrackerError when Linear refuses or fails),
        its strings cleaned."""
        token = self.token()
        if token is None:
            raise TrackerError(
                f"golem has no Linear token: set ${self.config.token_env} "
                "([server.linear] token_env) and restart golem serve"
            )
        oauth = self.config.token_kind == "oauth"  # noqa: S105 - a kind, not a token
        header = f"Bearer {token}" if oauth else token  # a personal API key goes as it is
        body = {"query": document, "variables": variables, "operationName": name}
        try:
            async with httpx.AsyncClient(
                timeout=TIMEOUT, transport=self._transport, follow_redirects=False
            ) as client:
                answer = await client.post(
                    self.config.api_url, json=body, headers={"Authorization": header}
                )
        except httpx.HTTPError as exc:
            raise TrackerError(f"Linear's API cannot be reached ({name}): {exc!r}") from exc
        return _data(name, answer)

    async def viewer(self) -> LinearUser:
        """The token's own user (golem's, in Linear)."""
        return _model(LinearUser, (await self.call("Viewer", VIEWER, {})).get("viewer"), "viewer")

    async def user(self, user_id: str) -> LinearUser | None:
        """A user of the workspace, or None when Linear knows none by that id."""
        try:
            found = (await self.call("User", USER, {"id": user_id})).get("user")
        except TrackerError as exc:
            if "not found" in exc.message.lower() or "entity not found" in exc.message.lower():
                return None
            raise
        return _model(LinearUser, found, "user") if found else None

    async def issue(self, issue_id: str) -> LinearIssue:
        """An issue with its team, project, state, labels and comments."""
        found = (await self.call("Issue", ISSUE, {"id": issue_id})).get("issue")
        if not isinstance(found, dict):
            raise TrackerError(f"Linear has no issue {issue_id!r} (or golem may not read it)")
        flat = {
            **found,
            "labels": (found.get("labels") or {}).get("nodes") or [],
            "comments": await self._all_comments(issue_id, found.get("comments")),
        }
        return _model(LinearIssue, flat, "issue")

    async def _all_comments(self, issue_id: str, first: object) -> list[object]:
        """Every comment of the issue whose first page is ``first``: the next pages after
        its ``pageInfo``'s cursor, at most ``COMMENT_PAGES``."""
        page = first if isinstance(first, dict) else {}
        nodes: list[object] = list(page.get("nodes") or [])
        for _ in range(COMMENT_PAGES - 1):
            info = page.get("pageInfo") or {}
            cursor = info.get("endCursor") if isinstance(info, dict) else None
            if not (isinstance(info, dict) and info.get("hasNextPage") and isinstance(cursor, str)):
                break
            variables = {"id": issue_id, "after": cursor}
            issue = (await self.call("IssueComments", COMMENTS, variables)).get("issue") or {}
            page = issue.get("comments") or {} if isinstance(issue, dict) else {}
            nodes += page.get("nodes") or []
        return nodes

    async def states(self, team_id: str) -> list[WorkflowState]:
        """The team's workflow states."""
        found = (await self.call("WorkflowStates", STATES, {"team": team_id})).get("workflowStates")
        nodes = (found or {}).get("nodes") or []
        return [_model(WorkflowState, node, "workflowStates") for node in nodes]

    async def comment(self, issue_id: str, body: str) -> str:
        """Comment ``body`` (markdown) on the issue; the comment's id."""
        made = await self.call(
            "CommentCreate", COMMENT, {"input": {"issueId": issue_id, "body": body}}
        )
        return _created(made, "commentCreate", "comment")

    async def edit_comment(self, comment_id: str, body: str) -> None:
        """Make ``body`` the comment's text (golem's own comment)."""
        await self.call("CommentUpdate", EDIT, {"id": comment_id, "input": {"body": body}})

    async def move(self, issue_id: str, state_id: str) -> None:
        """Move the issue to a workflow state."""
        await self.call("IssueUpdate", MOVE, {"id": issue_id, "input": {"stateId": state_id}})

    async def activity(
        self, session_id: str, kind: ActivityKind, body: str, *, ephemeral: bool = False
    ) -> str:
        """Emit an agent activity (thought, response, error...) in an agent session; its
        id. An ephemeral one is replaced by the session's next activity."""
        content = {"type": kind, "body": body}
        payload: dict[str, Any] = {"agentSessionId": session_id, "content": content}
        if ephemeral:
            payload["ephemeral"] = True
        made = await self.call("AgentActivityCreate", ACTIVITY, {"input": payload})
        return _created(made, "agentActivityCreate", "agentActivity")

    async def thoughts(self, session_id: str) -> list[SessionThought]:
        """The agent session's lasting thoughts (not ephemeral), oldest first."""
        found = (await self.call("AgentSession", SESSION, {"id": session_id})).get("agentSession")
        nodes = ((found or {}).get("activities") or {}).get("nodes") or []
        return [
            SessionThought(id=str(node["id"]), body=str((node.get("content") or {})["body"]))
            for node in nodes
            if isinstance(node, dict)
            and "id" in node
            and not node.get("ephemeral")
            and isinstance((node.get("content") or {}).get("body"), str)
        ]


def _data(name: str, answer: httpx.Response) -> dict[str, Any]:
    try:
        parsed = answer.json()
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise TrackerError(f"Linear answered {name} with HTTP {answer.status_code}, not JSON")
    cleaned = clean_json(parsed)
    errors = cleaned.get("errors")
    if answer.status_code >= 400 or errors:
        said = "; ".join(
            str(error.get("message", "")) for error in errors or [] if isinstance(error, dict)
        )[:500]
        raise TrackerError(
            f"Linear refused {name} (HTTP {answer.status_code}): {said or 'no reason given'}"
        )
    data = cleaned.get("data")
    return data if isinstance(data, dict) else {}


def _created(data: dict[str, Any], mutation: str, made: str) -> str:
    """The id of what ``mutation`` made (TrackerError: Linear did not say it made it)."""
    answer = data.get(mutation) or {}
    found = (answer.get(made) or {}).get("id") if isinstance(answer, dict) else None
    if not isinstance(found, str) or not found:
        raise TrackerError(f"Linear's {mutation} did not say what it made: try again later")
    return found


def _model(model: type[M], value: object, what: str) -> M:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise TrackerError(f"Linear's {what} is not what golem expects: {exc}") from exc
