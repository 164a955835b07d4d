"""A loopback Linear GraphQL API for tests: the operations golem sends (``Viewer``,
``User``, ``Issue``, ``WorkflowStates``, ``CommentCreate``, ``CommentUpdate``,
``IssueUpdate``, ``AgentActivityCreate``, ``AgentSession``, ``IssueComments``), answered in
Linear's shapes (connections as ``{nodes: [...]}``; an issue's comments paged as Linear pages
them: ``first`` (50 unless said, at most 250) after the cursor ``after``, with ``pageInfo``'s
``hasNextPage`` and ``endCursor``; an activity's content as its union's member; errors as
``{"errors": [{"message", "extensions"}]}``), users with what Linear says of them (``active``,
``guest``, ``app``, their ``teams``), and what golem did kept to assert::

    with LinearServer(token="lin_api_test") as linear:
        team = linear.add_team("ENG")
        issue = linear.add_issue(team, "Fix add()", "It subtracts.")
        ...  # point [server.linear] api_url at linear.graphql_url
        assert linear.comments(issue)[-1].startswith("golem opened")

A request without ``Authorization: <token>`` (an API key; ``Bearer <token>`` for OAuth
tokens) gets Linear's authentication error; an operation whose document does not define
it, or that the server does not know, gets a GraphQL validation error.
"""

from __future__ import annotations

import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from golem.testing.wire import RecordedRequest, Reply, WireServer

__all__ = ["LinearServer", "Team"]

STATES = (  # a team's default workflow, as Linear makes it (and a second started state)
    ("Backlog", "backlog", 0.0),
    ("Todo", "unstarted", 1.0),
    ("In Progress", "started", 2.0),
    ("In Review", "started", 3.0),
    ("Done", "completed", 4.0),
    ("Canceled", "canceled", 5.0),
)


def _id() -> str:
    return str(uuid.uuid4())


@dataclass
class Team:
    """A team and its workflow states."""

    id: str
    key: str
    states: list[dict[str, Any]] = field(default_factory=list)


def error(message: str, code: str) -> Reply:
    """Linear's GraphQL error body."""
    body = {"errors": [{"message": message, "extensions": {"code": code, "type": code.lower()}}]}
    return Reply.json(body, status=400 if code != "AUTHENTICATION_ERROR" else 401)


class LinearServer(WireServer):
    """Linear's GraphQL endpoint at ``/graphql``, with teams, users, issues and comments."""

    def __init__(self, token: str, *, oauth: bool = False) -> None:
        super().__init__()
        self.token = token
        self.authorization = f"Bearer {token}" if oauth else token
        self.viewer: dict[str, Any] = {"id": _id(), "name": "golem", "active": True}
        self.users: dict[str, dict[str, Any]] = {self.viewer["id"]: self.viewer}
        self.teams: dict[str, Team] = {}
        self.issues: dict[str, dict[str, Any]] = {}
        self.activities: list[dict[str, Any]] = []
        self.edits: list[tuple[str, str]] = []
        """Each ``commentUpdate``: the comment's id and its new body."""
        self.moves: list[tuple[str, str]] = []
        self._guard = threading.Lock()
        self.otherwise(self._route)

    @property
    def graphql_url(self) -> str:
        """The endpoint golem's ``[server.linear] api_url`` names."""
        return f"{self.url}/graphql"

    def add_user(
        self,
        name: str,
        *,
        active: bool = True,
        guest: bool = False,
        app: bool = False,
        teams: tuple[Team, ...] = (),
    ) -> str:
        """A user of the workspace (a guest, an app user, ...), member of ``teams``; its id."""
        user: dict[str, Any] = {
            "id": _id(), "name": name, "active": active, "guest": guest, "app": app,
            "teams": {"nodes": [{"id": team.id, "key": team.key} for team in teams]},
        }  # fmt: skip
        self.users[user["id"]] = user
        return str(user["id"])

    def add_team(self, key: str) -> Team:
        """A team with Linear's default workflow states."""
        team = Team(id=_id(), key=key)
        team.states = [
            {"id": _id(), "name": name, "type": kind, "position": position}
            for name, kind, position in STATES
        ]
        self.teams[team.id] = team
        return team

    def add_issue(
        self,
        team: Team,
        title: str,
        description: str,
        *,
        number: int = 1,
        comments: tuple[tuple[str, str], ...] = (),
        creator: str | None = None,
    ) -> dict[str, Any]:
        """An issue of ``team`` in its Todo state, made by ``creator`` (a user's id; None:
        golem's own), with ``comments`` ((user id, body))."""
        issue: dict[str, Any] = {
            "id": _id(),
            "identifier": f"{team.key}-{number}",
            "title": title,
            "description": description,
            "url": f"https://linear.app/acme/issue/{team.key}-{number}",
            "team": {"id": team.id, "key": team.key, "name": team.key},
            "project": None,
            "state": _state(team, "Todo"),
            "assignee": None,
            "creator": self._named(creator or self.viewer["id"]),
            "labels": {"nodes": []},
            "comments": {"nodes": []},
        }
        for user, body in comments:
            self._comment(issue, body, user)
        self.issues[issue["id"]] = issue
        return issue

    def comments(self, issue: dict[str, Any]) -> list[str]:
        """The bodies of the issue's comments, oldest first."""
        with self._guard:
            return [c["body"] for c in self.issues[issue["id"]]["comments"]["nodes"]]

    def guard(self) -> threading.Lock:
        """The lock the server's answers hold: to read its issues as they are."""
        return self._guard

    def state_of(self, issue: dict[str, Any]) -> str:
        """The name of the issue's state now."""
        return str(self.issues[issue["id"]]["state"]["name"])

    def check(self, request: RecordedRequest) -> Reply | None:
        """Linear's refusals: another path, no or another token."""
        if request.method != "POST" or request.path != "/graphql":
            return Reply(status=404, body=b"Cannot find that")
        if request.headers.get("authorization") != self.authorization:
            return error("Authentication required, not authenticated", "AUTHENTICATION_ERROR")
        return None

    def _route(self, request: RecordedRequest) -> Reply:
        body = request.json
        name, variables = body.get("operationName"), body.get("variables") or {}
        document = str(body.get("query", ""))
        if not re.search(rf"^\s*(query|mutation) {name}\b", document):
            return error(f'Unknown operation named "{name}".', "GRAPHQL_VALIDATION_FAILED")
        handler = getattr(self, f"_op_{name}", None)
        if handler is None:
            return error(f'Cannot query operation "{name}".', "GRAPHQL_VALIDATION_FAILED")
        with self._guard:
            found: Reply = (
                handler(variables, document)
                if name in ("Issue", "IssueComments")
                else handler(variables)
            )
            return found

    def _op_Viewer(self, variables: dict[str, Any]) -> Reply:
        return Reply.json({"data": {"viewer": self.viewer}})

    def _op_User(self, variables: dict[str, Any]) -> Reply:
        user = self.users.get(variables.get("id", ""))
        if user is None:
            return error("Entity not found: User", "INVALID_INPUT")
        return Reply.json({"data": {"user": user}})

    def _op_Issue(self, variables: dict[str, Any], document: str) -> Reply:
        issue = self.issues.get(variables.get("id", ""))
        if issue is None:
            return error("Entity not found: Issue", "INVALID_INPUT")
        page = _page(issue["comments"]["nodes"], _arguments(document, "comments", variables))
        return Reply.json({"data": {"issue": {**issue, "comments": page}}})

    def _op_IssueComments(self, variables: dict[str, Any], document: str) -> Reply:
        return self._op_Issue(variables, document)

    def _op_WorkflowStates(self, variables: dict[str, Any]) -> Reply:
        team = self.teams.get(variables.get("team", ""))
        return Reply.json({"data": {"workflowStates": {"nodes": team.states if team else []}}})

    def _op_CommentCreate(self, variables: dict[str, Any]) -> Reply:
        given = variables.get("input") or {}
        issue = self.issues.get(given.get("issueId", ""))
        if issue is None:
            return error("Entity not found: Issue", "INVALID_INPUT")
        made = self._comment(issue, str(given.get("body", "")), self.viewer["id"])
        return Reply.json({"data": {"commentCreate": {"success": True, "comment": {"id": made}}}})

    def _op_CommentUpdate(self, variables: dict[str, Any]) -> Reply:
        comment_id, body = variables.get("id", ""), (variables.get("input") or {}).get("body")
        found = next(
            (
                c
                for issue in self.issues.values()
                for c in issue["comments"]["nodes"]
                if c["id"] == comment_id
            ),
            None,
        )
        if found is None:
            return error("Entity not found: Comment", "INVALID_INPUT")
        if found["user"]["id"] != self.viewer["id"]:
            return error("You can only edit your own comments", "FORBIDDEN")
        if body is not None:
            found["body"] = str(body)
            self.edits.append((comment_id, str(body)))
        return Reply.json(
            {"data": {"commentUpdate": {"success": True, "comment": {"id": comment_id}}}}
        )

    def _op_IssueUpdate(self, variables: dict[str, Any]) -> Reply:
        issue = self.issues.get(variables.get("id", ""))
        state_id = (variables.get("input") or {}).get("stateId")
        team = self.teams[issue["team"]["id"]] if issue else None
        state = next((s for s in team.states if s["id"] == state_id), None) if team else None
        if issue is None or state is None:
            return error("Entity not found", "INVALID_INPUT")
        issue["state"] = {"id": state["id"], "name": state["name"], "type": state["type"]}
        self.moves.append((issue["identifier"], state["name"]))
        return Reply.json({"data": {"issueUpdate": {"success": True}}})

    def _op_AgentActivityCreate(self, variables: dict[str, Any]) -> Reply:
        given = variables.get("input") or {}
        content = given.get("content") or {}
        if content.get("type") not in ("thought", "action", "response", "error", "elicitation"):
            return error("content.type is not an activity type", "INVALID_INPUT")
        made = {**given, "id": _id()}
        self.activities.append(made)
        created = {"success": True, "agentActivity": {"id": made["id"]}}
        return Reply.json({"data": {"agentActivityCreate": created}})

    def _op_AgentSession(self, variables: dict[str, Any]) -> Reply:
        session_id = variables.get("id", "")
        mine = [a for a in self.activities if a.get("agentSessionId") == session_id]
        if not mine:
            return error("Entity not found: AgentSession", "INVALID_INPUT")
        nodes = [_activity_node(a) for a in mine]
        return Reply.json(
            {"data": {"agentSession": {"id": session_id, "activities": {"nodes": nodes}}}}
        )

    def _named(self, user: str) -> dict[str, Any]:
        return {"id": user, "name": self.users.get(user, {}).get("name", "someone")}

    def _comment(self, issue: dict[str, Any], body: str, user: str) -> str:
        made = {
            "id": _id(),
            "body": body,
            "createdAt": "2026-01-05T10:00:00.000Z",
            "user": self._named(user),
        }
        issue["comments"]["nodes"].append(made)
        return str(made["id"])


def _arguments(document: str, field_name: str, variables: dict[str, Any]) -> dict[str, Any]:
    """The arguments ``document`` gives ``field_name`` (``comments(first: 50, after: $x)``),
    variables resolved."""
    found = re.search(rf"\b{field_name}\s*\(([^)]*)\)", document)
    arguments: dict[str, Any] = {}
    for part in found[1].split(",") if found else []:
        name, _, value = (piece.strip() for piece in part.partition(":"))
        if value.startswith("$"):
            arguments[name] = variables.get(value[1:])
        elif value.isdigit():
            arguments[name] = int(value)
        else:
            arguments[name] = value.strip('"')
    return arguments


def _page(nodes: list[dict[str, Any]], arguments: dict[str, Any]) -> dict[str, Any]:
    """A connection's page as Linear gives it: ``first`` nodes (50 unless said, at most 250)
    after the cursor ``after`` (a node's id here), with ``pageInfo``."""
    first = min(int(arguments.get("first") or 50), 250)
    after = arguments.get("after")
    ids = [node["id"] for node in nodes]
    start = ids.index(after) + 1 if after in ids else 0
    page = nodes[start : start + first]
    info = {
        "hasNextPage": start + first < len(nodes),
        "endCursor": page[-1]["id"] if page else None,
    }
    return {"nodes": page, "pageInfo": info}


def _activity_node(activity: dict[str, Any]) -> dict[str, Any]:
    """An activity as Linear answers it: its content a union, its fields per type."""
    content = activity.get("content") or {}
    typename = f"AgentActivity{str(content.get('type', '')).capitalize()}Content"
    return {
        "id": activity["id"],
        "ephemeral": bool(activity.get("ephemeral")),
        "content": {"__typename": typename, **content},
    }


def _state(team: Team, name: str) -> dict[str, Any]:
    found = next(s for s in team.states if s["name"] == name)
    return {"id": found["id"], "name": found["name"], "type": found["type"]}
