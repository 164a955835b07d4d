"""The GitLab trigger of `golem serve`, against a real server: deliveries carry the webhook's
secret token (401 without it, 503 for all while no secret is configured); an issue newly
labelled for golem, or a note mentioning it, starts a run; a note on a merge request golem
opened starts a follow-up when its author may push, and a polite refusal, once, otherwise;
everything else is answered and ignored with a reason. Payloads are GitLab's documented
examples (tests/service/payloads/gitlab), changed only where a test needs it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from golem.core.server_config import GitLabTriggerConfig
from golem.service.trigger import Ignored, IssueCall, ReviewCall
from golem.service.trigger.gitlab_events import read_delivery
from golem.testing.gitlab_server import GitLabServer
from tests.blueprint.repos import EXAMPLES, branch_commits, git, make_remote
from tests.service.github_triggers import pending_of, remotes, run_to_end
from tests.service.gitlab_triggers import (  # noqa: F401 - its fixtures
    SECRET,
    TOKEN,
    deliver,
    gitlab,
    labelled,
    noted,
    payload,
)
from tests.service.polling import eventually
from tests.service.review_triggers import FOLLOW_UP_SCRIPT, gated
from tests.service.served import Served, serving

__all__ = ["remotes"]  # a fixture

pytestmark = pytest.mark.bwrap

SERVER_ENV = {"TRIGGER_TEST_GITLAB_SECRET": SECRET, "TRIGGER_TEST_GITLAB_TOKEN": TOKEN}
DEVELOPER, REPORTER = 30, 20  # GitLab's access levels
CONFIG = """
[server.gitlab]
secret_env = "TRIGGER_TEST_GITLAB_SECRET"
label = "golem"
handle = "@golem"
repo_url = "/nowhere/{repo}.git"
"""


def gitlab_config(gitlab: GitLabServer, remotes: Path, home: Path) -> str:  # noqa: F811 - fixtures, imported above
    """golem.toml of a server whose GitLab is the loopback one."""
    model = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    return f"""
[forge]
provider = "gitlab"

[forge.gitlab]
base_url = "{gitlab.base_url}"
token_env = "TRIGGER_TEST_GITLAB_TOKEN"

[server.gitlab]
secret_env = "TRIGGER_TEST_GITLAB_SECRET"
label = "golem"
handle = "@golem"
blueprint = "{gated(home, "minion")}"
follow_up_blueprint = "{gated(home, "follow-up")}"
model = "{model}"
repo_url = "{remotes}/{{repo}}.git"
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    remotes: Path,
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("gitlab-trigger")
    config = gitlab_config(gitlab, remotes, home)
    with serving(home / "state", config=config, env=SERVER_ENV) as server:
        yield server


@pytest.fixture(scope="module")
def key(served: Served) -> str:
    return served.key("default")


def new_project(gitlab: GitLabServer, remotes: Path, name: str) -> str:  # noqa: F811 - fixtures, imported above
    """group/sub/NAME: a bare repository of examples/calculator, with issue 1 about it,
    a developer and a reporter."""
    make_remote(remotes / "group" / "sub", name)
    project = f"group/sub/{name}"
    gitlab.add_issue(project, 1, "add() subtracts its arguments", "`add(2, 3)` gives -1.")
    gitlab.add_member(project, "dev", DEVELOPER)
    gitlab.add_member(project, "reporter", REPORTER)
    return project


def notes_of(gitlab: GitLabServer, project: str, iid: int, *, mr: bool = False) -> list[str]:  # noqa: F811 - fixtures, imported above
    """The bodies of an issue's (or merge request's) notes, oldest first."""
    found = gitlab.project(project)
    if mr:
        return [n["body"] for d in found.discussions.get(iid, []) for n in d["notes"]]
    return [n["body"] for n in found.issue_notes.get(iid, [])]


def note_by(gitlab: GitLabServer, project: str, kind: str, iid: int, text: str,  # noqa: F811 - fixtures, imported above
            author: str) -> dict[str, Any]:  # fmt: skip
    """A Note Hook for ``author``'s new note on issue or merge request ``iid``."""
    hook = noted(kind, text, author=author, author_id=gitlab.add_user(author)["id"])
    hook["project"]["path_with_namespace"] = project
    hook["issue" if kind == "Issue" else "merge_request"]["iid"] = iid
    return hook


def test_a_delivery_without_the_secret_token_is_refused(served: Served) -> None:
    hook = labelled("group/sub/project", 1, (), ("golem",))
    missing = deliver(served, "Issue Hook", hook, token=None)
    wrong = deliver(served, "Issue Hook", hook, token="not-the-token")  # noqa: S106
    for answer in (missing, wrong):
        assert answer.status_code == 401, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
    assert "X-Gitlab-Token" in wrong.json()["detail"]
    with served.admin() as admin:
        assert admin.get("/v1/runs").json() == []


def test_without_a_secret_every_delivery_is_refused(tmp_path: Path) -> None:
    with serving(tmp_path / "state", config=CONFIG, env={}) as server:
        hook = labelled("group/project", 1, (), ("golem",))
        answers = [
            deliver(server, "Issue Hook", hook),
            deliver(server, "Pipeline Hook", payload("pipeline_hook"), token=None),
        ]
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert "$TRIGGER_TEST_GITLAB_SECRET" in answer.json()["detail"]


def test_deliveries_that_ask_for_nothing_start_nothing_and_say_why(served: Served) -> None:
    project = "group/sub/unasked"
    closed = labelled(project, 2, (), ("golem",))
    closed["object_attributes"]["state"] = "closed"
    asks = [
        ("Pipeline Hook", payload("pipeline_hook"), "no automation watches gitlab-org/gitlab-test"),
        ("Merge Request Hook", {"object_kind": "merge_request"}, "start no runs"),
        ("Issue Hook", payload("issue_hook"), "was not added"),
        ("Issue Hook", labelled(project, 2, ("golem",), ("golem", "bug")), "was not added"),
        ("Issue Hook", labelled(project, 2, (), ("bug",)), "was not added"),
        ("Issue Hook", closed, "is closed"),
        ("Issue Hook", {"object_kind": "issue", "project": {}}, "names no project"),
    ]
    for event, body, reason in asks:
        answer = deliver(served, event, body)
        assert answer.status_code == 202, (event, answer.text)
        assert answer.json()["status"] == "ignored"
        assert reason in answer.json()["reason"], (event, answer.json())
    no_uuid = httpx.post(
        f"{served.url}/v1/gitlab/webhook",
        content=json.dumps(payload("pipeline_hook")),
        headers={"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": SECRET},
    )
    assert no_uuid.status_code == 400, no_uuid.text
    with served.admin() as admin:
        assert admin.get("/v1/runs").json() == []


def test_a_note_on_a_merge_request_asks_for_a_follow_up_in_its_discussion() -> None:
    hook = noted("MergeRequest", "@golem please handle the empty list", author_id=42)
    call = read_delivery("Note Hook", hook, GitLabTriggerConfig(), own_login="golem-bot")
    assert isinstance(call, ReviewCall)
    assert (call.repo, call.number, call.key) == ("gitlab-org/gitlab-test", 1,
                                                  "gitlab-org/gitlab-test!1")  # fmt: skip
    assert (call.sender, call.user) == ("root", "42")  # permission is asked by user id
    assert call.thread == "f3ab1bd8a9a04b7e9f5e61c2ba5a2d6c2dbd2c0e"
    assert call.request == "@golem please handle the empty list"


def test_a_note_on_an_issue_asks_for_a_run_by_a_member() -> None:
    call = read_delivery(
        "Note Hook", noted("Issue", "@golem fix this"), GitLabTriggerConfig(), None
    )
    assert isinstance(call, IssueCall)
    assert (call.ref, call.member) == ("gitlab-org/gitlab-test#17", "1")


def test_notes_that_ask_nothing_are_ignored() -> None:
    config = GitLabTriggerConfig()
    system = noted("MergeRequest", "@golem added 1 commit")
    system["object_attributes"]["system"] = True
    edited = noted("Issue", "@golem fix")
    edited["object_attributes"]["action"] = "update"
    merged = noted("MergeRequest", "@golem fix")
    merged["merge_request"]["state"] = "merged"
    commit = noted("Issue", "@golem fix")
    commit["object_attributes"]["noteable_type"] = "Commit"
    asks = [
        (noted("Issue", "> @golem fix\n\nno"), "does not mention"),
        (noted("MergeRequest", "@golem again", author="golem-bot"), "golem's own account"),
        (noted("Issue", "done <!-- golem:done run-1 -->"), "golem's own"),
        (system, "GitLab's or golem's own"),
        (edited, "only new notes"),
        (merged, "is merged"),
        (commit, "Commit"),
    ]
    for hook, reason in asks:
        found = read_delivery("Note Hook", hook, config, own_login="golem-bot")
        assert isinstance(found, Ignored), (hook["object_attributes"], found)
        assert reason in found.reason
    quiet = GitLabTriggerConfig(follow_up_on=["changes_requested"])
    found = read_delivery("Note Hook", noted("MergeRequest", "@golem fix"), quiet, None)
    assert isinstance(found, Ignored)


def test_a_label_no_named_user_set_is_asked_by_no_person() -> None:
    config = GitLabTriggerConfig()
    by_someone = labelled("group/app", 1, (), ("golem",))
    by_no_one = labelled("group/app", 1, (), ("golem",))
    by_no_one["user"] = {}
    asked = read_delivery("Issue Hook", by_someone, config, own_login=None)
    unasked = read_delivery("Issue Hook", by_no_one, config, own_login=None)
    assert isinstance(asked, IssueCall)
    assert isinstance(unasked, IssueCall)
    assert asked.unasked is None
    assert unasked.unasked == "the label was set by no one GitLab names"


def test_an_issue_labelled_for_golem_runs_to_a_merge_request_and_a_developers_note_follows_up(
    served: Served,
    key: str,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    remotes: Path,
) -> None:
    project = new_project(gitlab, remotes, "labelled")
    answer = deliver(served, "Issue Hook", labelled(project, 1, ("bug",), ("bug", "golem")))
    assert answer.status_code == 202, answer.text
    assert answer.json()["status"] == "started"
    run_id = answer.json()["run_id"]
    assert run_to_end(served, key, run_id)["status"] == "succeeded"
    assert any(f"run `{run_id}` for this issue" in n for n in notes_of(gitlab, project, 1))
    [mr] = gitlab.merge_requests(project)
    assert f"<!-- golem:pr {run_id} -->" in mr["description"]
    hook = note_by(gitlab, project, "MergeRequest", mr["iid"], "@golem handle add(0, 0)", "dev")
    asked = deliver(served, "Note Hook", hook)
    assert asked.status_code == 202, asked.text
    assert asked.json()["status"] == "started", asked.text
    with served.client(key) as client:
        run = client.get(f"/v1/runs/{asked.json()['run_id']}").json()
    assert run["request"]["forge"] == "gitlab"
    assert run["request"]["follow_up"] == {
        "repo": project, "number": mr["iid"], "parent_run": run_id, "requested_by": "dev",
        "thread": hook["object_attributes"]["discussion_id"],
        "request": "@golem handle add(0, 0)",
    }  # fmt: skip
    assert run_to_end(served, key, run["id"], "cancel")["status"] == "cancelled"
    notes = notes_of(gitlab, project, mr["iid"], mr=True)
    assert any(f"run `{run['id']}` for this pull request" in n for n in notes)
    refused = note_by(gitlab, project, "MergeRequest", mr["iid"], "@golem please", "reporter")
    for _ in range(2):
        answer = deliver(served, "Note Hook", refused)
        assert (answer.status_code, answer.json()["status"]) == (202, "ignored"), answer.text
        assert "reporter has read access" in answer.json()["reason"]
    refusals = [n for n in notes_of(gitlab, project, mr["iid"], mr=True) if "golem:refused" in n]
    assert len(refusals) == 1


def test_a_members_mention_on_an_issue_starts_a_run_and_a_strangers_does_not(
    served: Served,
    key: str,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    remotes: Path,
) -> None:
    project = new_project(gitlab, remotes, "mentioned")
    stranger = deliver(
        served, "Note Hook", note_by(gitlab, project, "Issue", 1, "@golem fix", "eve")
    )
    assert stranger.json()["status"] == "ignored", stranger.text
    assert "not a member" in stranger.json()["reason"]
    delivery = str(uuid.uuid4())
    hook = note_by(gitlab, project, "Issue", 1, "@golem fix it", "reporter")
    answer = deliver(served, "Note Hook", hook, delivery=delivery)
    assert answer.json()["status"] == "started", answer.text
    run_id = answer.json()["run_id"]
    again = deliver(served, "Note Hook", hook, delivery=delivery)
    assert (again.status_code, again.json()["status"], again.json()["run_id"]) == (
        200, "duplicate", run_id,
    )  # fmt: skip
    with served.client(key) as client:
        run = client.get(f"/v1/runs/{run_id}").json()
    assert (run["request"]["issue"], run["request"]["forge"]) == (f"{project}#1", "gitlab")
    assert run_to_end(served, key, run_id, "cancel")["status"] == "cancelled"


def test_a_members_mention_while_the_issues_run_runs_is_queued_and_starts_after_it(
    served: Served,
    key: str,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    remotes: Path,
) -> None:
    project = new_project(gitlab, remotes, "mentioned-meanwhile")
    first = deliver(served, "Issue Hook", labelled(project, 1, (), ("golem",))).json()["run_id"]
    stranger = deliver(
        served, "Note Hook", note_by(gitlab, project, "Issue", 1, "@golem now", "mallory")
    )
    assert stranger.json()["status"] == "ignored", stranger.text  # never kept, not queued
    hook = note_by(gitlab, project, "Issue", 1, f"@golem fix it with {TOKEN}", "dev")
    asked = deliver(served, "Note Hook", hook)
    assert (asked.status_code, asked.json()["status"], asked.json()["run_id"]) == (
        202, "queued", first,
    )  # fmt: skip
    [kept] = pending_of(served, f"{project}#1", "gitlab")
    assert (kept.asked_by, kept.person) == ("dev", str(hook["user"]["id"]))
    assert TOKEN not in kept.request
    assert run_to_end(served, key, first, "cancel")["status"] == "cancelled"
    second = eventually(
        lambda: next((i for i in issue_runs(served, key, project) if i != first), None),
        "the queued mention's run",
    )
    assert pending_of(served, f"{project}#1", "gitlab") == []
    assert run_to_end(served, key, second, "cancel")["status"] == "cancelled"
    assert sorted(issue_runs(served, key, project)) == sorted([first, second])


def issue_runs(served: Served, key: str, project: str) -> list[str]:
    """The ids of the tenant's runs for issue 1 of ``project``."""
    with served.client(key) as client:
        listed = client.get("/v1/runs", params={"limit": 500}).json()
    return [r["id"] for r in listed if r["request"]["issue"] == f"{project}#1"]


def test_a_follow_up_pushes_a_commit_to_the_merge_request_and_replies_in_the_discussion(
    tmp_path: Path,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    remotes: Path,
) -> None:
    project = new_project(gitlab, remotes, "followed")
    bare = remotes / f"{project}.git"
    script = tmp_path / "follow-up.yaml"
    fixer = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    config = gitlab_config(gitlab, remotes, tmp_path).replace(fixer, f"scripted:{script}")
    with serving(tmp_path / "state", config=config, env=SERVER_ENV) as server:
        key = server.key("default", "trusted")  # its runs may name a scripted model's file
        parent = {"repo": str(bare), "issue": f"{project}#1", "forge": "gitlab", "model": fixer}
        with server.client(key) as client:
            submitted = client.post("/v1/runs", json=parent)
        assert submitted.status_code == 202, submitted.text
        assert run_to_end(server, key, submitted.json()["id"])["status"] == "succeeded"
        [mr] = gitlab.merge_requests(project)
        asked = "@golem say in add()'s docstring that it takes ints"
        thread = gitlab.project(project).add_discussion(
            mr["iid"], [("dev", asked)], path="calculator.py", line=5
        )
        script.write_text(FOLLOW_UP_SCRIPT.format(thread=thread["id"]))
        hook = note_by(gitlab, project, "MergeRequest", mr["iid"], asked, "dev")
        hook["object_attributes"]["discussion_id"] = thread["id"]
        answer = deliver(server, "Note Hook", hook)
        assert answer.json()["status"] == "started", answer.text
        end = run_to_end(server, key, answer.json()["run_id"])
    assert end["status"] == "succeeded", end
    assert len(branch_commits(bare, mr["source_branch"])) == 2  # the fix, then the follow-up's
    assert "(ints work too)" in git("show", f"{mr['source_branch']}:calculator.py", cwd=bare)
    replies = [(n["author"]["username"], n["body"]) for n in thread["notes"][1:]]
    assert replies == [("golem-bot", "Documented it.")]


def test_without_repo_url_runs_clone_from_the_gitlab_instance(
    tmp_path: Path,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    remotes: Path,
) -> None:
    project = new_project(gitlab, remotes, "cloned")
    config = gitlab_config(gitlab, remotes, tmp_path)
    config = config.replace(f'repo_url = "{remotes}/{{repo}}.git"\n', "")
    with serving(tmp_path / "state", config=config, env=SERVER_ENV) as server:
        key = server.key("default")
        answer = deliver(server, "Issue Hook", labelled(project, 1, (), ("golem",)))
        assert answer.json()["status"] == "started", answer.text
        run_id = answer.json()["run_id"]
        with server.client(key) as client:
            run = client.get(f"/v1/runs/{run_id}").json()
        assert run_to_end(server, key, run_id, "cancel")["status"] == "cancelled"
    assert run["request"]["repo"] == f"{gitlab.base_url}/{project}.git"
