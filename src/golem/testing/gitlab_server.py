"""A loopback GitLab REST API v4 for tests: the endpoints golem uses, with GitLab's request
and response shapes, pagination headers (``x-next-page``, ``x-total``, ``Link``) and error
bodies (``{"message": ...}``, ``{"error": ...}``); a list's pages carry both ``x-next-page``
and ``Link`` (``link_pages = False`` leaves ``Link`` out, as some proxies do).

Give it projects, issues and people, point a forge at ``server.base_url``, then assert what
was made::

    with GitLabServer(token="glpat-test") as server:
        server.add_issue("group/sub/demo", 7, "Fix the parser", notes=["It fails on '{'"])
        server.ci = lambda project, sha: [{"name": "test", "status": "failed", "trace": "..."}]
        forge = GitLabForge(GitLabConfig(base_url=server.base_url, token_env="T"))
        ...
        assert server.merge_requests("group/sub/demo")[0]["source_branch"] == "golem/fix"

Projects are named by path (``group/sub/demo``) and reached by their URL-encoded path or
numeric id. Issues and merge requests have separate ``iid`` sequences; a merge request's
``sha`` is what ``head_sha(project, branch)`` answers when set. A merge request's
notes are discussions (``individual_note`` for a plain note), as on GitLab. CI is scripted
with ``ci``: a function of ``(project, sha)`` returning job dicts (``name``, ``status``, and
optionally ``stage``, ``allow_failure``, ``failure_reason``, ``trace``), asked again on every
request so a test's CI can change as golem pushes; a sha with jobs gets one pipeline (the
same id every time), whose jobs also show as commit statuses (as on GitLab), with the
external statuses of ``add_status``. Failures are scripted with ``push`` (from
``WireServer``); build them with ``gitlab_error``. With ``token`` set, requests without
``PRIVATE-TOKEN: TOKEN`` (or ``Authorization: Bearer TOKEN``) get GitLab's 401 first. With
``oauth`` (an ``OAuthAuthority``, ``src/golem/testing/gitlab_oauth_server.py``), ``POST
/oauth/token`` refreshes its grants and every API request wants one of its access tokens
that still works.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from golem.testing.gitlab_oauth_server import OAuthAuthority, expired_token_reply
from golem.testing.gitlab_state import Project
from golem.testing.wire import RecordedRequest, Reply, WireServer

__all__ = ["CIScript", "GitLabServer", "RecordedRequest", "Reply", "gitlab_error"]

CIScript = Callable[[str, str], list[dict[str, Any]]]
"""``(project, sha) -> jobs``: the CI a test scripts."""

P = r"^/api/v4/projects/(?P<project>[^/]+)"
MR = rf"{P}/merge_requests/(?P<iid>\d+)"
ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (method, re.compile(pattern + "$"), handler)
    for method, pattern, handler in (
        ("GET", P, "get_project"),
        ("GET", rf"{P}/issues/(?P<iid>\d+)", "get_issue"),
        ("GET", rf"{P}/issues/(?P<iid>\d+)/notes", "list_issue_notes"),
        ("POST", rf"{P}/issues/(?P<iid>\d+)/notes", "create_issue_note"),
        ("POST", rf"{P}/merge_requests", "create_mr"),
        ("GET", rf"{P}/merge_requests", "list_mrs"),
        ("GET", MR, "get_mr"),
        ("PUT", MR, "update_mr"),
        ("GET", rf"{MR}/notes", "list_mr_notes"),
        ("POST", rf"{MR}/notes", "create_mr_note"),
        ("GET", rf"{MR}/discussions", "list_discussions"),
        ("POST", rf"{MR}/discussions/(?P<discussion>[0-9a-f]+)/notes", "reply_discussion"),
        ("GET", rf"{MR}/approvals", "get_approvals"),
        ("GET", rf"{MR}/reviewers", "list_reviewers"),
        ("GET", rf"{P}/members/all/(?P<user>\d+)", "get_member"),
        ("GET", rf"{P}/pipelines", "list_pipelines"),
        ("GET", rf"{P}/pipelines/(?P<pipeline>\d+)/jobs", "list_jobs"),
        ("GET", rf"{P}/jobs/(?P<job>\d+)/trace", "get_trace"),
        ("GET", rf"{P}/repository/commits/(?P<sha>[0-9a-f]+)/statuses", "list_statuses"),
    )
)
USERS = re.compile(r"^/api/v4/users$")


def gitlab_error(status: int, message: Any, *, headers: dict[str, str] | None = None) -> Reply:
    """GitLab's error body ``{"message": ...}`` (a string, a list, or a dict of fields)."""
    return Reply.json({"message": message}, status=status, headers=headers)


class GitLabServer(WireServer):
    """GitLab's REST API v4 on 127.0.0.1 and a free port."""

    def __init__(self, token: str | None = None, *, oauth: OAuthAuthority | None = None) -> None:
        super().__init__()
        self.token = token
        self.oauth = oauth
        self.ci: CIScript | None = None
        """The scripted CI (None: no pipeline for any commit)."""
        self.link_pages = True
        """Whether list pages carry ``Link`` beside ``x-next-page``."""
        self.head_sha: Callable[[str, str], str | None] | None = None
        """``(project, branch) -> sha``, asked when a merge request is read, so that its
        ``sha`` follows what was pushed (e.g. ``git rev-parse`` in a bare repository)."""
        self._state = threading.Lock()
        self._projects: dict[str, Project] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self.add_user("golem-bot")
        self.otherwise(self.route)

    @property
    def base_url(self) -> str:
        """What to give ``GitLabConfig(base_url=...)``."""
        return self.url

    def project(self, path: str) -> Project:
        """Project ``path``, made when first named."""
        with self._state:
            return self._project(path)

    def add_user(self, username: str) -> dict[str, Any]:
        """A person GitLab knows (``/users?username=``)."""
        with self._state:
            user = self._users.get(username)
            if user is None:
                user = {"id": 100 + len(self._users), "username": username, "name": username}
                user |= {"state": "active", "web_url": f"https://gitlab.com/{username}"}
                self._users[username] = user
            return user

    def add_member(self, path: str, username: str, access_level: int) -> None:
        """Make ``username`` a member of project ``path`` (50 owner ... 10 guest)."""
        user = self.add_user(username)
        self.project(path).members[user["id"]] = (user, access_level)

    def add_issue(
        self,
        path: str,
        iid: int,
        title: str,
        description: str | None = "",
        *,
        labels: Iterable[str] = (),
        notes: Iterable[str | tuple[str, str]] = (),
    ) -> dict[str, Any]:
        """Issue ``path#iid``; a note is its body, or ``(author, body)``."""
        with self._state:
            project = self._project(path)
            issue = project.new_issue(iid, title, description, list(labels))
            for note in notes:
                author, body = note if isinstance(note, tuple) else ("alice", note)
                project.add_note(project.issue_notes.setdefault(iid, []), body, author)
            return issue

    def add_status(self, path: str, sha: str, name: str, status: str, **fields: Any) -> None:
        """An external commit status (``description``, ``target_url``, ``allow_failure``)."""
        with self._state:
            self._project(path).add_status(sha, name, status, fields)

    def merge_requests(self, path: str) -> list[dict[str, Any]]:
        """Merge requests of ``path``, oldest first, as the API shows them."""
        with self._state:
            return list(self._project(path).mrs.values())

    def check(self, request: RecordedRequest) -> Reply | None:
        """GitLab's 401 for a missing or wrong token, when the server has one (or an OAuth
        access token that does not work)."""
        if self.oauth is not None:
            if urlsplit(request.path).path == "/oauth/token":
                return None
            bearer = request.headers.get("authorization") or ""
            if bearer.startswith("Bearer ") and self.oauth.accepts(bearer.removeprefix("Bearer ")):
                return None
            return expired_token_reply()
        if self.token is None:
            return None
        given, authorization = (
            request.headers.get("private-token"),
            request.headers.get("authorization"),
        )
        if given == self.token or authorization == f"Bearer {self.token}":
            return None
        return gitlab_error(401, "401 Unauthorized")

    def route(self, request: RecordedRequest) -> Reply:
        """The stateful answer to ``request`` (what answers when nothing is scripted)."""
        url = urlsplit(request.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        if self.oauth is not None and request.method == "POST" and url.path == "/oauth/token":
            return self.oauth.token_endpoint(request.body)
        if request.method == "GET" and USERS.match(url.path):
            with self._state:
                found = [u for u in self._users.values() if u["username"] == query.get("username")]
            return Reply.json(found)
        for method, pattern, handler in ROUTES:
            if method == request.method and (match := pattern.match(url.path)):
                args = match.groupdict()
                with self._state:
                    project = self._find(unquote(args.pop("project")))
                    if project is None:
                        return gitlab_error(404, "404 Project Not Found")
                    self._refresh_ci(project)
                    answer = getattr(project, handler)(request, query, **args)
                if isinstance(answer, Reply):
                    return answer
                return _page(request, query, answer, self.url if self.link_pages else None)
        return gitlab_error(404, "404 Not Found")

    def _project(self, path: str) -> Project:
        if path not in self._projects:
            self._projects[path] = Project(path, 10 + len(self._projects), self._users)
        return self._projects[path]

    def _find(self, key: str) -> Project | None:
        if key.isdigit():
            return next((p for p in self._projects.values() if p.id == int(key)), None)
        return self._projects.get(key)

    def _refresh_ci(self, project: Project) -> None:
        """Hand the project the scripted CI and heads, asked again on every request."""
        project.ci, project.head_sha = self.ci, self.head_sha


def _page(
    request: RecordedRequest, query: dict[str, str], items: list[Any], base: str | None
) -> Reply:
    """One page of ``items`` with GitLab's pagination headers (``x-*`` and ``Link``)."""
    per_page = max(1, min(int(query.get("per_page", 20)), 100))
    page = max(1, int(query.get("page", 1)))
    total_pages = max(1, -(-len(items) // per_page))
    headers = {
        "x-page": str(page),
        "x-per-page": str(per_page),
        "x-total": str(len(items)),
        "x-total-pages": str(total_pages),
        "x-next-page": str(page + 1) if page < total_pages else "",
        "x-prev-page": str(page - 1) if page > 1 else "",
    }
    url = urlsplit(request.path)

    def link(to: int, rel: str) -> str:
        others = {k: v for k, v in query.items() if k != "page"}
        return f'<{base}{url.path}?{urlencode({**others, "page": to})}>; rel="{rel}"'

    if base is not None:
        links = [link(page + 1, "next")] if page < total_pages else []
        headers["link"] = ", ".join([*links, link(1, "first"), link(total_pages, "last")])
    return Reply.json(items[(page - 1) * per_page : page * per_page], headers=headers)
