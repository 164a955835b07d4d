"""The CI part of the loopback GitHub (``GitHubServer`` has it): check runs, commit statuses,
branch protection, GitHub Actions jobs and their logs on a second origin.

Script CI per commit, statically or as a function of what was pushed::

    server.set_checks("octo/demo", sha, [{"name": "test", "conclusion": "failure",
                                          "steps": [("Run tests", "failure")],
                                          "log": "...##[error]Process completed..."}])
    server.set_statuses("octo/demo", sha, [{"context": "ci/jenkins", "state": "pending"}])
    server.ci = lambda repo, sha: [...]   # asked on every read; wins over set_checks
    server.ci = lambda repo, sha: [{"name": "test", "conclusion":
        "success" if commit_file(bare, sha, "ci-result") == "pass\n" else "failure"}]
    server.protect("octo/demo", "main", ["test"])

A check run is given as GitHub shows it, with only what matters to the test: ``status``
(default ``completed``, or ``in_progress`` when there is no ``conclusion``), ``conclusion``,
``app`` (a slug, default ``github-actions``), ``output``, ``check_suite`` (``{"id": N}``:
give one to make a re-run of a job); the server fills ``id`` (stable per repository, commit,
name and how many times the name came before), ``head_sha``, the URLs. Extra keys, not
shown by the API: ``steps`` (``(name, conclusion)`` pairs, the Actions job's),
``log`` (its raw log; None: the log has expired, 410) and ``annotations`` (dicts as GitHub's
annotations endpoint returns them). A ``ci`` entry with a ``context`` is a commit status.

The log endpoint answers 302 to ``server.logs`` (a ``LogHost`` on another port), which
refuses any request carrying ``Authorization``, as a pre-signed storage URL does.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from golem.testing.wire import RecordedRequest, Reply, WireServer

__all__ = ["CI_ROUTES", "CIEndpoints", "LogHost", "commit_file"]

REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
CI_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(rf"^{REPO}/commits/(?P<ref>[^/]+)/check-runs$"), "_list_check_runs"),
    ("GET", re.compile(rf"^{REPO}/commits/(?P<ref>[^/]+)/status$"), "_combined_status"),
    ("GET", re.compile(rf"^{REPO}/check-runs/(?P<run>\d+)$"), "_get_check_run"),
    ("GET", re.compile(rf"^{REPO}/check-runs/(?P<run>\d+)/annotations$"), "_list_annotations"),
    ("GET", re.compile(rf"^{REPO}/actions/jobs/(?P<run>\d+)$"), "_get_job"),
    ("GET", re.compile(rf"^{REPO}/actions/jobs/(?P<run>\d+)/logs$"), "_job_logs"),
    ("GET", re.compile(rf"^{REPO}/branches/(?P<branch>.+)$"), "_get_branch"),
    ("GET", re.compile(rf"^{REPO}/rules/branches/(?P<branch>.+)$"), "_branch_rules"),
)
CIScript = Callable[[str, str], Sequence[dict[str, Any]]]
HIDDEN = ("steps", "log", "annotations")


def commit_file(bare: Path, sha: str, path: str) -> str | None:
    """File ``path`` as commit ``sha`` of repository ``bare`` holds it, or None (no such
    commit or file): lets ``server.ci`` judge what golem pushed, with no timing."""
    command = ["git", "-C", str(bare), "show", f"{sha}:{path}"]
    shown = subprocess.run(command, check=False, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


class LogHost(WireServer):
    """Where job logs are downloaded from: pre-signed URLs, no ``Authorization`` allowed."""

    def __init__(self) -> None:
        super().__init__()
        self._logs: dict[str, bytes] = {}
        self.otherwise(self._serve_log)

    def publish(self, key: str, text: str) -> str:
        """Serve ``text`` at a signed URL; returns it."""
        with self._lock:
            self._logs[key] = text.encode()
        return f"{self.url}/logs/{key}.txt?sig=signed-{key}"

    def check(self, request: RecordedRequest) -> Reply | None:
        """Storage refuses a second authority on a pre-signed URL (and the test learns the
        token left GitHub's origin)."""
        if "authorization" in request.headers:
            return Reply(status=400, body=b"<Error>Authorization header not allowed</Error>")
        return None

    def _serve_log(self, request: RecordedRequest) -> Reply:
        key = urlsplit(request.path).path.removeprefix("/logs/").removesuffix(".txt")
        with self._lock:
            body = self._logs.get(key)
        if body is None:
            return Reply(status=404, body=b"<Error>BlobNotFound</Error>")
        return Reply(headers={"content-type": "text/plain"}, body=body)


class CIEndpoints:
    """CI state and endpoints, mixed into ``GitHubServer`` (which holds ``_state``)."""

    url: str
    _state: threading.Lock
    _ids: int

    def _init_ci(self) -> None:
        self.ci: CIScript | None = None
        """Called with ``(repo, sha)`` on every read of a commit's CI; wins over set_*."""
        self.logs = LogHost()
        self._checks: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._statuses: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._run_ids: dict[tuple[str, str, str, int], int] = {}
        self._runs: dict[tuple[str, int], dict[str, Any]] = {}
        self._protection: dict[tuple[str, str], list[str]] = {}
        self._rulesets: dict[tuple[str, str], list[str]] = {}

    def set_checks(self, repo: str, sha: str, runs: Iterable[dict[str, Any]]) -> None:
        """The check runs of ``repo@sha`` (see the module's docstring)."""
        with self._state:
            self._checks[(repo, sha)] = list(runs)

    def set_statuses(self, repo: str, sha: str, statuses: Iterable[dict[str, Any]]) -> None:
        """The commit statuses of ``repo@sha``, oldest first: ``context``, ``state``,
        ``description``, ``target_url``."""
        with self._state:
            self._statuses[(repo, sha)] = list(statuses)

    def protect(
        self, repo: str, branch: str, required: Sequence[str], *, ruleset: bool = False
    ) -> None:
        """Protect ``branch``, requiring the checks named ``required``: by its branch
        protection, or by a ruleset (``ruleset=True``)."""
        with self._state:
            where = self._rulesets if ruleset else self._protection
            where[(repo, branch)] = list(required)

    # Endpoints (called with the state lock held) ----------------------------------------

    def _list_check_runs(
        self, repo: str, request: RecordedRequest, query: dict[str, str], ref: str
    ) -> Reply:
        runs = [self._public(run) for run in self._commit_ci(repo, ref)[0]]
        per_page = min(int(query.get("per_page", 30)), 100)
        page = int(query.get("page", 1))
        chunk = runs[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(runs) // per_page))
        links = self._links(request, per_page, page, last)  # type: ignore[attr-defined]
        return Reply.json({"total_count": len(runs), "check_runs": chunk}, headers=links)

    def _combined_status(
        self, repo: str, request: RecordedRequest, query: dict[str, str], ref: str
    ) -> Reply:
        statuses = [
            {
                "id": 500 + n,
                "context": s["context"],
                "state": s.get("state", "pending"),
                "description": s.get("description"),
                "target_url": s.get("target_url"),
                "created_at": f"2024-05-01T13:{n % 60:02d}:00Z",
                "updated_at": f"2024-05-01T13:{n % 60:02d}:00Z",
            }
            for n, s in enumerate(self._commit_ci(repo, ref)[1])
        ]
        states = {s["state"] for s in statuses}
        state = next((x for x in ("failure", "error", "pending") if x in states), "success")
        return Reply.json(
            {
                "state": state if statuses else "pending",
                "sha": ref,
                "total_count": len(statuses),
                "statuses": statuses,
            }
        )

    def _get_check_run(
        self, repo: str, request: RecordedRequest, query: dict[str, str], run: str
    ) -> Reply:
        found = self._runs.get((repo, int(run)))
        return Reply.json(self._public(found)) if found else _not_found()

    def _list_annotations(
        self, repo: str, request: RecordedRequest, query: dict[str, str], run: str
    ) -> Reply:
        found = self._runs.get((repo, int(run)))
        return Reply.json(found.get("annotations") or []) if found else _not_found()

    def _get_job(
        self, repo: str, request: RecordedRequest, query: dict[str, str], run: str
    ) -> Reply:
        found = self._runs.get((repo, int(run)))
        if found is None or found["app"]["slug"] != "github-actions":
            return _not_found()
        steps = [
            {"name": name, "status": "completed", "conclusion": conclusion, "number": n + 1}
            for n, (name, conclusion) in enumerate(found.get("steps") or [])
        ]
        fields = ("id", "name", "status", "conclusion", "head_sha", "html_url")
        job = {key: found[key] for key in fields}
        return Reply.json({**job, "run_id": 9000 + int(run), "steps": steps})

    def _job_logs(
        self, repo: str, request: RecordedRequest, query: dict[str, str], run: str
    ) -> Reply:
        found = self._runs.get((repo, int(run)))
        if found is None or found["app"]["slug"] != "github-actions":
            return _not_found()
        if found.get("log") is None:
            return Reply.json({"message": "Gone", "status": "410"}, status=410)
        location = self.logs.publish(f"{repo.replace('/', '-')}-{run}", found["log"])
        return Reply(status=302, headers={"location": location})

    def _get_branch(
        self, repo: str, request: RecordedRequest, query: dict[str, str], branch: str
    ) -> Reply:
        branch = unquote(branch)  # GitHub takes a branch's name percent-encoded, `/` as it is
        required = self._protection.get((repo, branch))
        body: dict[str, Any] = {"name": branch, "commit": {"sha": "1" * 40}, "protected": False}
        if required is not None:
            checks = {
                "enforcement_level": "non_admins",
                "contexts": required,
                "checks": [{"context": name, "app_id": None} for name in required],
            }
            body.update(
                protected=True, protection={"enabled": True, "required_status_checks": checks}
            )
        return Reply.json(body)

    def _branch_rules(
        self, repo: str, request: RecordedRequest, query: dict[str, str], branch: str
    ) -> Reply:
        branch = unquote(branch)
        required = self._rulesets.get((repo, branch))
        if required is None:
            return Reply.json([{"type": "deletion", "ruleset_id": 41}])
        checks = [{"context": name, "integration_id": 15368} for name in required]
        parameters = {
            "required_status_checks": checks,
            "strict_required_status_checks_policy": False,
        }
        rule = {
            "type": "required_status_checks",
            "parameters": parameters,
            "ruleset_id": 42,
            "ruleset_source_type": "Repository",
            "ruleset_source": repo,
        }
        return Reply.json([{"type": "deletion", "ruleset_id": 41}, rule])

    # Helpers ----------------------------------------------------------------------------

    def _commit_ci(self, repo: str, sha: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The check runs (filled in and kept by id) and statuses of ``repo@sha``."""
        if self.ci is not None:
            scripted = list(self.ci(repo, sha))
            given = [x for x in scripted if "context" not in x]
            statuses = [x for x in scripted if "context" in x]
        else:
            given = self._checks.get((repo, sha), [])
            statuses = self._statuses.get((repo, sha), [])
        names = [run["name"] for run in given]
        runs = [
            self._fill(repo, sha, run, names[:n].count(run["name"])) for n, run in enumerate(given)
        ]
        return runs, statuses

    def _fill(self, repo: str, sha: str, given: dict[str, Any], attempt: int) -> dict[str, Any]:
        key = (repo, sha, given["name"], attempt)
        if key not in self._run_ids:
            self._ids += 1
            self._run_ids[key] = self._ids
        run_id = self._run_ids[key]
        slug = given.get("app", "github-actions")
        conclusion = given.get("conclusion")
        run = {
            "id": run_id,
            "name": given["name"],
            "head_sha": sha,
            "status": given.get("status", "completed" if conclusion else "in_progress"),
            "conclusion": conclusion,
            "html_url": f"https://github.com/{repo}/actions/runs/{9000 + run_id}/job/{run_id}",
            "details_url": f"https://github.com/{repo}/runs/{run_id}",
            "output": {"title": None, "summary": None, "text": None, "annotations_count": 0},
            "app": {"slug": slug, "name": slug.replace("-", " ").title(), "id": 15368},
            "check_suite": {"id": 7000 + run_id},
            **{k: v for k, v in given.items() if k not in ("app", "name", "status")},
        }
        run["output"] = {**run["output"], **(given.get("output") or {})}
        run["output"]["annotations_count"] = len(given.get("annotations") or [])
        self._runs[(repo, run_id)] = run
        return run

    @staticmethod
    def _public(run: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in run.items() if k not in HIDDEN}


def _not_found() -> Reply:
    return Reply.json(
        {
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
            "status": "404",
        },
        status=404,
    )
