"""One project of the loopback GitLab (src/golem/testing/gitlab_server.py): its issues, merge
requests, notes and discussions, approvals, members, pipelines, jobs and commit statuses,
and the endpoints that read and change them (called with the server's lock held)."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from typing import Any

from golem.testing.wire import RecordedRequest, Reply

__all__ = ["Project"]

Query = dict[str, str]
Answer = Reply | list[Any]
CIScript = Callable[[str, str], list[dict[str, Any]]]
DRAFT_PREFIXES = ("draft:", "[draft]", "(draft)")
RUNNING = frozenset({"created", "pending", "running", "preparing", "waiting_for_resource"})
_clock = itertools.count()


def _stamp() -> str:
    """Timestamps that increase with every object made."""
    n = next(_clock)
    return f"2024-05-01T{12 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def _error(status: int, message: Any) -> Reply:
    return Reply.json({"message": message}, status=status)


class Project:
    """A GitLab project: everything kept for it, by path."""

    def __init__(self, path: str, number: int, users: dict[str, dict[str, Any]]) -> None:
        self.path = path
        self.id = number
        self.web = f"https://gitlab.example.com/{path}"
        self.users = users
        self.issues: dict[int, dict[str, Any]] = {}
        self.issue_notes: dict[int, list[dict[str, Any]]] = {}
        self.mrs: dict[int, dict[str, Any]] = {}
        self.discussions: dict[int, list[dict[str, Any]]] = {}
        self.approvals: dict[int, list[str]] = {}
        self.review_states: dict[tuple[int, str], str] = {}
        """A reviewer's state on a merge request (``unreviewed`` unless set): ``reviewed``,
        ``requested_changes``, ``approved``..."""
        self.members: dict[int, tuple[dict[str, Any], int]] = {}
        self.statuses: dict[str, list[dict[str, Any]]] = {}
        self.ci: CIScript | None = None
        self.jobs_enabled = True
        """False: CI/CD is switched off in the project (its pipelines answer 403)."""
        self.head_sha: Callable[[str, str], str | None] | None = None
        self._ids = itertools.count(1000 * number)
        self._job_ids: dict[tuple[str, str, int], int] = {}
        self._pipeline_ids: dict[str, int] = {}

    # Building state (tests) -------------------------------------------------------------

    def user(self, username: str) -> dict[str, Any]:
        """``username`` as notes and members show a person (made when first named)."""
        if username not in self.users:
            self.users[username] = {"id": 100 + len(self.users), "username": username}
        user = self.users[username]
        return {"id": user["id"], "username": username, "name": username, "state": "active"}

    def new_issue(
        self, iid: int, title: str, description: str | None, labels: list[str]
    ) -> dict[str, Any]:
        """Issue ``iid``."""
        issue = self._item(iid, "issues", title, description) | {"labels": labels}
        self.issues[iid] = issue
        return issue

    def new_mr(self, source: str, target: str, title: str, **fields: Any) -> dict[str, Any]:
        """A merge request from ``source`` into ``target`` (the next iid)."""
        iid = max(self.mrs, default=0) + 1
        mr = self._item(iid, "merge_requests", title, fields.pop("description", None))
        mr |= {
            "source_branch": source,
            "target_branch": target,
            "source_project_id": self.id,
            "target_project_id": self.id,
            "labels": [],
            "reviewers": [],
            "sha": "0" * 40,
            "draft": title.lower().startswith(DRAFT_PREFIXES),
            "merge_status": "can_be_merged",
        }
        mr["work_in_progress"] = mr["draft"]
        mr.update(fields)
        self.mrs[iid] = mr
        self.discussions[iid] = []
        return mr

    def add_note(
        self, notes: list[dict[str, Any]], body: str, author: str, **fields: Any
    ) -> dict[str, Any]:
        """A note at the end of ``notes``."""
        note = {
            "id": next(self._ids),
            "type": None,
            "body": body,
            "author": self.user(author),
            "created_at": _stamp(),
            "system": False,
            "resolvable": False,
        }
        note.update(fields)
        notes.append(note)
        return note

    def add_discussion(
        self,
        iid: int,
        notes: list[tuple[str, str]],
        *,
        path: str | None = None,
        line: int | None = None,
        resolved: bool = False,
        individual: bool = False,
    ) -> dict[str, Any]:
        """A discussion on merge request ``iid``: ``(author, body)`` notes, on a line of
        ``path`` (a DiffNote thread) or not, resolved or not, or one plain note."""
        identifier = hashlib.sha1(str(next(self._ids)).encode()).hexdigest()  # noqa: S324
        discussion: dict[str, Any] = {"id": identifier, "individual_note": individual, "notes": []}
        kind = None if individual else ("DiffNote" if path else "DiscussionNote")
        for author, body in notes:
            fields: dict[str, Any] = {"type": kind, "resolvable": not individual}
            if not individual:
                fields["resolved"] = resolved
            if path is not None:
                fields["position"] = {"new_path": path, "new_line": line, "old_path": path}
            self.add_note(discussion["notes"], body, author, **fields)
        self.discussions[iid].append(discussion)
        return discussion

    def add_status(self, sha: str, name: str, status: str, fields: dict[str, Any]) -> None:
        """An external commit status on ``sha``."""
        entry = {"id": next(self._ids), "sha": sha, "name": name, "status": status}
        entry |= {"description": None, "target_url": None, "allow_failure": False}
        self.statuses.setdefault(sha, []).append(entry | {"created_at": _stamp(), **fields})

    # Endpoints --------------------------------------------------------------------------

    def get_project(self, request: RecordedRequest, query: Query) -> Answer:
        access = "enabled" if self.jobs_enabled else "disabled"
        return Reply.json(
            {
                "id": self.id,
                "path_with_namespace": self.path,
                "web_url": self.web,
                "default_branch": "main",
                "jobs_enabled": self.jobs_enabled,
                "builds_access_level": access,
            }
        )

    def get_issue(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        issue = self.issues.get(int(iid))
        return Reply.json(issue) if issue else _error(404, "404 Issue Not Found")

    def list_issue_notes(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        if int(iid) not in self.issues:
            return _error(404, "404 Issue Not Found")
        return _sorted(self.issue_notes.get(int(iid), []), query)

    def create_issue_note(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        if int(iid) not in self.issues:
            return _error(404, "404 Issue Not Found")
        body = request.json.get("body")
        if not body:
            return Reply.json({"error": "body is missing"}, status=400)
        notes = self.issue_notes.setdefault(int(iid), [])
        return Reply.json(self.add_note(notes, body, "golem-bot"), status=201)

    def create_mr(self, request: RecordedRequest, query: Query) -> Answer:
        data = request.json
        for field in ("source_branch", "target_branch", "title"):
            if not data.get(field):
                return Reply.json({"error": f"{field} is missing"}, status=400)
        for mr in self.mrs.values():
            if mr["state"] == "opened" and mr["source_branch"] == data["source_branch"]:
                exists = "Another open merge request already exists for this source branch"
                return _error(409, [f"{exists}: !{mr['iid']}"])
        labels = data.get("labels") or ""
        names = labels.split(",") if isinstance(labels, str) else list(labels)
        mr = self.new_mr(
            data["source_branch"],
            data["target_branch"],
            data["title"],
            description=data.get("description"),
            labels=[n for n in names if n],
        )
        return Reply.json(self._headed(mr), status=201)

    def list_mrs(self, request: RecordedRequest, query: Query) -> Answer:
        state = query.get("state", "all")
        found = [
            mr
            for mr in self.mrs.values()
            if state in ("all", mr["state"])
            and query.get("source_branch", mr["source_branch"]) == mr["source_branch"]
        ]
        return [self._headed(mr) for mr in sorted(found, key=lambda mr: -int(mr["iid"]))]

    def get_mr(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        mr = self.mrs.get(int(iid))
        return Reply.json(self._headed(mr)) if mr else _error(404, "404 Not found")

    def update_mr(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        mr = self.mrs.get(int(iid))
        if mr is None:
            return _error(404, "404 Not found")
        data = request.json
        if "add_labels" in data:
            adding = [n for n in str(data["add_labels"]).split(",") if n]
            mr["labels"] += [n for n in adding if n not in mr["labels"]]
        if "reviewer_ids" in data:
            by_id = {u["id"]: u["username"] for u in self.users.values()}
            if any(i not in by_id for i in data["reviewer_ids"]):
                return _error(400, {"reviewers": ["must be members"]})
            mr["reviewers"] = [self.user(by_id[i]) for i in data["reviewer_ids"]]
        return Reply.json(mr)

    def list_mr_notes(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        if int(iid) not in self.mrs:
            return _error(404, "404 Not found")
        notes = [n for d in self.discussions[int(iid)] for n in d["notes"]]
        return _sorted(notes, query)

    def create_mr_note(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        if int(iid) not in self.mrs:
            return _error(404, "404 Not found")
        body = request.json.get("body")
        if not body:
            return Reply.json({"error": "body is missing"}, status=400)
        discussion = self.add_discussion(int(iid), [("golem-bot", body)], individual=True)
        return Reply.json(discussion["notes"][0], status=201)

    def list_discussions(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        if int(iid) not in self.mrs:
            return _error(404, "404 Not found")
        return list(self.discussions[int(iid)])

    def reply_discussion(
        self, request: RecordedRequest, query: Query, iid: str, discussion: str
    ) -> Answer:
        found = [d for d in self.discussions.get(int(iid), []) if d["id"] == discussion]
        if not found:
            return _error(404, "404 Discussion Not Found")
        body = request.json.get("body")
        if not body:
            return Reply.json({"error": "body is missing"}, status=400)
        first = found[0]["notes"][0]
        fields = {k: first[k] for k in ("type", "resolvable", "resolved", "position") if k in first}
        return Reply.json(self.add_note(found[0]["notes"], body, "golem-bot", **fields), status=201)

    def get_approvals(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        if int(iid) not in self.mrs:
            return _error(404, "404 Not found")
        names = self.approvals.get(int(iid), [])
        approved_by = [{"user": self.user(name)} for name in names]
        return Reply.json({"iid": int(iid), "approved": bool(names), "approved_by": approved_by})

    def list_reviewers(self, request: RecordedRequest, query: Query, iid: str) -> Answer:
        mr = self.mrs.get(int(iid))
        if mr is None:
            return _error(404, "404 Not found")
        return [
            {
                "user": person,
                "state": self.review_states.get((int(iid), person["username"]), "unreviewed"),
                "created_at": mr["created_at"],
            }
            for person in mr["reviewers"]
        ]

    def get_member(self, request: RecordedRequest, query: Query, user: str) -> Answer:
        member = self.members.get(int(user))
        if member is None:
            return _error(404, "404 Not found")
        return Reply.json(member[0] | {"access_level": member[1]})

    def _headed(self, mr: dict[str, Any]) -> dict[str, Any]:
        """``mr`` with its source branch's head as ``sha``, where ``head_sha`` says."""
        if self.head_sha is not None:
            sha = self.head_sha(self.path, mr["source_branch"])
            mr["sha"] = sha if sha is not None else mr["sha"]
        return mr

    # CI ---------------------------------------------------------------------------------

    def list_pipelines(self, request: RecordedRequest, query: Query) -> Answer:
        if not self.jobs_enabled:
            return _error(403, "403 Forbidden")
        sha = query.get("sha")
        shas = [sha] if sha else list(self._pipeline_ids)
        return [p for p in (self._pipeline(s) for s in shas) if p is not None]

    def list_jobs(self, request: RecordedRequest, query: Query, pipeline: str) -> Answer:
        sha = next((s for s, i in self._pipeline_ids.items() if i == int(pipeline)), None)
        if sha is None:
            return _error(404, "404 Not found")
        return [{k: v for k, v in job.items() if k != "trace"} for job in self._jobs(sha)]

    def get_trace(self, request: RecordedRequest, query: Query, job: str) -> Answer:
        for sha in list(self._pipeline_ids):
            for entry in self._jobs(sha):
                if entry["id"] == int(job):
                    trace = str(entry.get("trace") or "").encode()
                    return Reply(headers={"content-type": "text/plain"}, body=trace)
        return _error(404, "404 Not found")

    def list_statuses(self, request: RecordedRequest, query: Query, sha: str) -> Answer:
        self._pipeline(sha)
        jobs = self._jobs(sha) if sha in self._pipeline_ids else []
        as_statuses = [
            {k: job[k] for k in ("id", "name", "status", "stage", "allow_failure")}
            | {"sha": sha, "target_url": job["web_url"], "description": None}
            for job in jobs
        ]
        return as_statuses + self.statuses.get(sha, [])

    def _scripted(self, sha: str) -> list[dict[str, Any]]:
        return [dict(job) for job in self.ci(self.path, sha)] if self.ci is not None else []

    def _pipeline(self, sha: str) -> dict[str, Any] | None:
        jobs = self._jobs(sha)
        if not jobs:
            return None
        number = self._pipeline_ids.setdefault(sha, next(self._ids))
        states = {job["status"] for job in jobs if not job["allow_failure"]}
        status = (
            "running"
            if states & RUNNING
            else "failed"
            if "failed" in states
            else "canceled"
            if "canceled" in states
            else "success"
        )
        return {
            "id": number,
            "iid": number % 1000,
            "project_id": self.id,
            "sha": sha,
            "ref": "golem",
            "status": status,
            "source": "push",
            "created_at": _stamp(),
            "web_url": f"{self.web}/-/pipelines/{number}",
        }

    def _jobs(self, sha: str) -> list[dict[str, Any]]:
        jobs = []
        seen: dict[str, int] = {}
        for job in self._scripted(sha):
            occurrence = seen[job["name"]] = seen.get(job["name"], -1) + 1
            number = self._job_ids.setdefault((sha, job["name"], occurrence), next(self._ids))
            job.setdefault("stage", "test")
            job.setdefault("allow_failure", False)
            failed = job["status"] == "failed"
            job.setdefault("failure_reason", "script_failure" if failed else None)
            job.setdefault("web_url", f"{self.web}/-/jobs/{number}")
            job |= {"id": number, "ref": "golem"}
            job["commit"] = {"id": sha}
            jobs.append(job)
        return jobs

    def _item(self, iid: int, kind: str, title: str, description: str | None) -> dict[str, Any]:
        return {
            "id": next(self._ids),
            "iid": iid,
            "project_id": self.id,
            "title": title,
            "description": description,
            "state": "opened",
            "author": self.user("alice"),
            "created_at": _stamp(),
            "web_url": f"{self.web}/-/{kind}/{iid}",
            "references": {"full": f"{self.path}{'!' if kind == 'merge_requests' else '#'}{iid}"},
        }


def _sorted(notes: list[dict[str, Any]], query: Query) -> list[dict[str, Any]]:
    """Notes as GitLab sorts them: newest first unless ``sort=asc``."""
    ordered = sorted(notes, key=lambda note: (note["created_at"], note["id"]))
    return ordered if query.get("sort") == "asc" else ordered[::-1]
