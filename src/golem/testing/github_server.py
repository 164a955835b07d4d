"""A loopback GitHub REST API for tests: the endpoints golem uses, with GitHub's request
and response shapes, headers (``Link`` pagination, ``x-ratelimit-*``) and error bodies.

Give it issues, point a forge at ``server.api_url``, then assert what was made::

    with GitHubServer(token="ghp_test") as server:
        server.add_issue("octo/demo", 7, "Fix the parser", comments=["It fails on '{'"])
        forge = GitHubForge(GitHubConfig(api_url=server.api_url, token_env="T"))
        ...  # fetch_issue("octo/demo#7"), open_pull_request(...), comment(...)
        assert server.pulls("octo/demo")[0]["head"]["ref"] == "golem/fix"
        assert server.labels("octo/demo", 8) == ["needs-human"]
        assert server.comments("octo/demo", 7)[-1]["body"].startswith("golem opened")

Endpoints: ``GET /repos/{o}/{r}/issues/{n}``, ``GET|POST .../issues/{n}/comments``
(``per_page``/``page`` and ``Link`` headers), ``POST .../issues/{n}/labels``,
``POST /repos/{o}/{r}/pulls`` (422 when one is open for the head, or a draft where
``drafts`` is off) and ``GET /repos/{o}/{r}/pulls?head=o:branch&state=open``
(``state=closed`` lists those ``add_closed_pull`` closed, the last updated first, by
``per_page`` and ``page``). Issues and pull requests share one number sequence per
repository, as on GitHub. CI (check runs, statuses, Actions jobs and logs, branch
protection) is ``github_ci_server.py``'s; a pull request by number, reviews, review
comments, GraphQL review threads, requested reviewers and permissions are
``github_review_server.py``'s.

Failures are scripted with ``push`` (inherited from ``WireServer``): the next requests get
those replies, whatever they ask; build them with ``github_error``, ``rate_limited`` and
``secondary_rate_limited``. With ``token`` set, requests without ``Authorization: Bearer
TOKEN`` (or ``token TOKEN``) get GitHub's 401 before any script. With ``app`` (an
``AppAuthority``, ``src/golem/testing/github_app_server.py``), the App's endpoints want its JWT
and every other request one of its installation tokens that has not expired.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from golem.testing.github_app_server import APP_ROUTES, AppAuthority
from golem.testing.github_ci_server import CI_ROUTES, CIEndpoints
from golem.testing.github_review_server import REVIEW_ROUTES, ReviewEndpoints
from golem.testing.wire import RecordedRequest, Reply, WireServer

__all__ = [
    "GitHubServer",
    "RecordedRequest",
    "Reply",
    "github_error",
    "rate_limited",
    "secondary_rate_limited",
]

DOCS = "https://docs.github.com/rest"
REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(rf"^{REPO}/issues/(?P<number>\d+)$"), "_get_issue"),
    ("GET", re.compile(rf"^{REPO}/issues/(?P<number>\d+)/comments$"), "_list_comments"),
    ("POST", re.compile(rf"^{REPO}/issues/(?P<number>\d+)/comments$"), "_create_comment"),
    ("POST", re.compile(rf"^{REPO}/issues/(?P<number>\d+)/labels$"), "_add_labels"),
    ("POST", re.compile(rf"^{REPO}/pulls$"), "_create_pull"),
    ("GET", re.compile(rf"^{REPO}/pulls$"), "_list_pulls"),
    *CI_ROUTES,
    *REVIEW_ROUTES,
)


def github_error(
    status: int,
    message: str,
    *,
    errors: Sequence[Mapping[str, Any]] | None = None,
    documentation_url: str = DOCS,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """GitHub's error body: ``{"message", "documentation_url", "errors"?, "status"}``."""
    body: dict[str, Any] = {"message": message, "documentation_url": documentation_url}
    if errors is not None:
        body["errors"] = list(errors)
    body["status"] = str(status)
    return Reply.json(body, status=status, headers=headers)


def rate_limited(reset_in: int = 3600) -> Reply:
    """The primary rate limit used up: 403, ``x-ratelimit-remaining: 0``, reset later."""
    reset = str(int(time.time()) + reset_in)
    return github_error(
        403,
        "API rate limit exceeded for user ID 1.",
        documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api",
        headers={
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": "5000",
            "x-ratelimit-reset": reset,
            "x-ratelimit-resource": "core",
        },
    )


def secondary_rate_limited(retry_after: int = 0, status: int = 403) -> Reply:
    """A secondary rate limit: 403 (or 429) with ``Retry-After``."""
    return github_error(
        status,
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        documentation_url=f"{DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
        headers={"retry-after": str(retry_after)},
    )


class GitHubServer(CIEndpoints, ReviewEndpoints, WireServer):
    """GitHub's REST API on 127.0.0.1 and a free port, with issues, pull requests,
    labels and comments kept per repository (``owner/name``), and CI per commit
    (``src/golem/testing/github_ci_server.py``) and reviews per pull request
    (``src/golem/testing/github_review_server.py``)."""

    def __init__(
        self, token: str | None = None, *, drafts: bool = True, app: AppAuthority | None = None
    ) -> None:
        super().__init__()
        self.token = token
        self.app = app
        self.drafts = drafts
        """Whether repositories accept draft pull requests."""
        self._state = threading.Lock()
        self._items: dict[str, dict[int, dict[str, Any]]] = {}
        self._comments: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._ids = 1000
        self._remaining = 5000
        self._init_ci()
        self._init_reviews()
        self.otherwise(self.route)

    def start(self) -> Self:
        """Start serving, and the log host with it."""
        self.logs.start()
        return super().start()

    def stop(self) -> None:
        """Stop serving, and the log host with it."""
        super().stop()
        self.logs.stop()

    @property
    def api_url(self) -> str:
        """What to give ``GitHubConfig(api_url=...)``."""
        return self.url

    def add_issue(
        self,
        repo: str,
        number: int,
        title: str,
        body: str | None = "",
        *,
        labels: Iterable[str] = (),
        comments: Iterable[str | tuple[str, str]] = (),
        author: str = "octocat",
    ) -> dict[str, Any]:
        """Create issue ``repo#number`` opened by ``author``; a comment is its body, or
        ``(author, body)``."""
        with self._state:
            issue = {
                **self._item(repo, number, "issues", title, body),
                "labels": [self._label(name) for name in labels],
                "comments": 0,
            }
            issue["user"] = {**issue["user"], "login": author}
            self._items.setdefault(repo, {})[number] = issue
        for comment in comments:
            author, text = comment if isinstance(comment, tuple) else ("octocat", comment)
            self.add_comment(repo, number, text, author=author)
        return issue

    def add_closed_pull(
        self,
        repo: str,
        number: int,
        title: str,
        body: str,
        *,
        closed_at: str,
        merge_commit: str | None = None,
        head: str = "feature",
        base: str = "main",
    ) -> dict[str, Any]:
        """Pull request ``repo#number``, closed at ``closed_at``: merged as ``merge_commit``
        then, when given, else closed unmerged."""
        with self._state:
            item = self._new_pull(repo, number, title, body, head, base)
            merged = merge_commit is not None
            item.update(
                state="closed",
                merged=merged,
                merged_at=closed_at if merged else None,
                merge_commit_sha=merge_commit,
                updated_at=closed_at,
            )
            self._items.setdefault(repo, {})[number] = item
            return item

    def add_comment(
        self, repo: str, number: int, body: str, *, author: str = "octocat"
    ) -> dict[str, Any]:
        """Add a comment to issue or pull request ``repo#number``."""
        with self._state:
            return self._new_comment(repo, number, body, author)

    def issue(self, repo: str, number: int) -> dict[str, Any] | None:
        """Issue or pull request ``repo#number`` as the API shows it, or None."""
        with self._state:
            return self._items.get(repo, {}).get(number)

    def pulls(self, repo: str) -> list[dict[str, Any]]:
        """Pull requests of ``repo``, oldest first, as the API shows them."""
        with self._state:
            items = self._items.get(repo, {}).values()
            return [item for item in items if "head" in item]

    def labels(self, repo: str, number: int) -> list[str]:
        """Label names of issue or pull request ``repo#number``."""
        item = self.issue(repo, number)
        return [label["name"] for label in item["labels"]] if item else []

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Comments of ``repo#number``, oldest first, as the API shows them."""
        with self._state:
            return list(self._comments.get((repo, number), []))

    def check(self, request: RecordedRequest) -> Reply | None:
        """GitHub's 401 for a missing or wrong token, when the server has one (or an App's
        JWT or installation token that does not work)."""
        if self.app is not None:
            return self._check_app(request, self.app)
        if self.token is None:
            return None
        given = request.headers.get("authorization")
        if given in (f"Bearer {self.token}", f"token {self.token}"):
            return None
        message = "Bad credentials" if given else "Requires authentication"
        return github_error(401, message)

    def _check_app(self, request: RecordedRequest, app: AppAuthority) -> Reply | None:
        given = request.headers.get("authorization") or ""
        path = urlsplit(request.path).path
        if any(request.method == method and pattern.match(path) for method, pattern in APP_ROUTES):
            why = app.check_jwt(given)
            return github_error(401, why) if why is not None else None
        if given and app.accepts(given.removeprefix("Bearer ").removeprefix("token ")):
            return None
        return github_error(401, "Bad credentials" if given else "Requires authentication")

    def _app_route(self, request: RecordedRequest, app: AppAuthority) -> Reply | None:
        """The App's endpoints (the JWT was checked)."""
        path = urlsplit(request.path).path
        for method, pattern in APP_ROUTES:
            found = pattern.match(path) if method == request.method else None
            if found is None:
                continue
            args = found.groupdict()
            if "owner" in args:
                number = app.installation_of(f"{args['owner']}/{args['name']}")
                if number is None:
                    return github_error(404, "Not Found")
                return Reply.json(self._installation(number, app))
            if "installation" not in args:
                listed = sorted(set(app.installations.values()))
                return Reply.json([self._installation(n, app) for n in listed])
            if int(args["installation"]) not in app.installations.values():
                return github_error(404, "Not Found")
            issued = app.issue(int(args["installation"]))
            body = {
                "token": issued.token,
                "expires_at": app.timestamp(issued.expires_at),
                "permissions": {"contents": "write", "issues": "write", "pull_requests": "write"},
                "repository_selection": "all",
            }
            return Reply.json(body, status=201)
        return None

    @staticmethod
    def _installation(number: int, app: AppAuthority) -> dict[str, Any]:
        account = {"login": "octo", "id": 1, "type": "Organization"}
        return {
            "id": number,
            "app_id": app.app_id,
            "account": account,
            "target_type": "Organization",
        }

    def route(self, request: RecordedRequest) -> Reply:
        """The stateful answer to ``request`` (what answers when nothing is scripted); push
        it to let one request through before scripted failures."""
        if self.app is not None and (answer := self._app_route(request, self.app)) is not None:
            return answer
        url = urlsplit(request.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        for method, pattern, handler in ROUTES:
            if method == request.method and (match := pattern.match(url.path)):
                args = match.groupdict()
                repo = f"{args.pop('owner')}/{args.pop('name')}" if "owner" in args else ""
                with self._state:
                    reply: Reply = getattr(self, handler)(repo, request, query, **args)
                    return self._with_rate_headers(reply)
        return github_error(404, "Not Found")

    def _with_rate_headers(self, reply: Reply) -> Reply:
        self._remaining = max(0, self._remaining - 1)
        headers = {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self._remaining),
            "x-ratelimit-used": str(5000 - self._remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-resource": "core",
            "x-github-api-version-selected": "2022-11-28",
            **reply.headers,
        }
        return Reply(status=reply.status, headers=headers, body=reply.body)

    # Endpoints (called with the state lock held) ----------------------------------------

    def _get_issue(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        item = self._items.get(repo, {}).get(int(number))
        return Reply.json(item) if item is not None else github_error(404, "Not Found")

    def _list_comments(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        if int(number) not in self._items.get(repo, {}):
            return github_error(404, "Not Found")
        comments = self._comments.get((repo, int(number)), [])
        per_page = min(int(query.get("per_page", 30)), 100)
        page = int(query.get("page", 1))
        chunk = comments[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(comments) // per_page))
        return Reply.json(chunk, headers=self._links(request, per_page, page, last))

    def _links(
        self, request: RecordedRequest, per_page: int, page: int, last: int
    ) -> dict[str, str]:
        path = urlsplit(request.path).path

        def link(to: int, rel: str) -> str:
            return f'<{self.url}{path}?per_page={per_page}&page={to}>; rel="{rel}"'

        links = []
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return {"link": ", ".join(links)} if links else {}

    def _create_comment(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        if int(number) not in self._items.get(repo, {}):
            return github_error(404, "Not Found")
        body = request.json.get("body")
        if not isinstance(body, str) or not body:
            return self._invalid("IssueComment", "body", "missing_field")
        return Reply.json(self._new_comment(repo, int(number), body, "golem-bot"), status=201)

    def _add_labels(
        self, repo: str, request: RecordedRequest, query: dict[str, str], number: str
    ) -> Reply:
        item = self._items.get(repo, {}).get(int(number))
        if item is None:
            return github_error(404, "Not Found")
        names = request.json.get("labels")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return self._invalid("Label", "labels", "invalid")
        known = {label["name"] for label in item["labels"]}
        item["labels"] += [self._label(name) for name in names if name not in known]
        return Reply.json(item["labels"])

    def _create_pull(self, repo: str, request: RecordedRequest, query: dict[str, str]) -> Reply:
        data = request.json
        for field in ("title", "head", "base"):
            if not isinstance(data.get(field), str) or not data[field]:
                return self._invalid("PullRequest", field, "missing_field")
        owner = repo.partition("/")[0]
        head = data["head"].split(":")[-1]
        for pull in self._pulls(repo):
            if pull["state"] == "open" and pull["head"]["ref"] == head:
                message = f"A pull request already exists for {owner}:{head}."
                return self._invalid("PullRequest", None, "custom", message)
        if data.get("draft") and not self.drafts:
            return github_error(422, "Draft pull requests are not supported in this repository.")
        number = max(self._items.get(repo, {}), default=0) + 1
        item = self._new_pull(repo, number, data["title"], data.get("body"), head, data["base"])
        item.update(draft=bool(data.get("draft")))
        item["user"]["login"] = self.login
        self._items.setdefault(repo, {})[number] = item
        return Reply.json(item, status=201)

    def _list_pulls(self, repo: str, request: RecordedRequest, query: dict[str, str]) -> Reply:
        pulls = self._pulls(repo)
        if "head" in query:
            pulls = [p for p in pulls if p["head"]["label"] == query["head"]]
        state = query.get("state", "open")
        if state != "all":
            pulls = [p for p in pulls if p["state"] == state]
        if query.get("sort") == "updated":
            pulls.sort(key=lambda p: p["updated_at"], reverse=query.get("direction") != "asc")
        per_page, page = min(int(query.get("per_page", 30)), 100), int(query.get("page", 1))
        return Reply.json(pulls[(page - 1) * per_page : page * per_page])

    # Helpers ----------------------------------------------------------------------------

    def _new_pull(
        self, repo: str, number: int, title: str, body: str | None, head: str, base: str
    ) -> dict[str, Any]:
        owner = repo.partition("/")[0]
        where = {"full_name": repo, "name": repo.partition("/")[2], "fork": False}
        item = self._item(repo, number, "pull", title, body)
        item.update(
            draft=False,
            labels=[],
            head={"ref": head, "label": f"{owner}:{head}", "sha": "0" * 40, "repo": where},
            base={"ref": base, "label": f"{owner}:{base}", "sha": "1" * 40, "repo": where},
            merged=False,
        )
        return item

    def _pulls(self, repo: str) -> list[dict[str, Any]]:
        return [item for item in self._items.get(repo, {}).values() if "head" in item]

    def _item(
        self, repo: str, number: int, kind: str, title: str, body: str | None
    ) -> dict[str, Any]:
        self._ids += 1
        api = f"{self.url}/repos/{repo}/{'pulls' if kind == 'pull' else 'issues'}/{number}"
        return {
            "id": self._ids,
            "node_id": f"I_{self._ids}",
            "url": api,
            "html_url": f"https://github.com/{repo}/{kind}/{number}",
            "number": number,
            "state": "open",
            "title": title,
            "body": body,
            "user": {"login": "octocat", "id": 1, "type": "User"},
            "created_at": "2024-05-01T12:00:00Z",
            "updated_at": "2024-05-01T12:00:00Z",
        }

    def _label(self, name: str) -> dict[str, Any]:
        self._ids += 1
        return {"id": self._ids, "name": name, "color": "ededed", "default": False}

    def _new_comment(self, repo: str, number: int, body: str, author: str) -> dict[str, Any]:
        self._ids += 1
        minute = len(self._comments.get((repo, number), [])) % 60
        comment = {
            "id": self._ids,
            "body": body,
            "user": {"login": author, "id": 2, "type": "User"},
            "html_url": f"https://github.com/{repo}/issues/{number}#issuecomment-{self._ids}",
            "created_at": f"2024-05-01T12:{minute:02d}:00Z",
        }
        self._comments.setdefault((repo, number), []).append(comment)
        return comment

    @staticmethod
    def _invalid(resource: str, field: str | None, code: str, message: str | None = None) -> Reply:
        error: dict[str, Any] = {"resource": resource, "code": code}
        if field is not None:
            error["field"] = field
        if message is not None:
            error["message"] = message
        return github_error(422, "Validation Failed", errors=[error])
