"""The GitHub trigger of `golem serve`, against a real server on loopback and a loopback
GitHub: signed deliveries start runs for labelled or mentioning issues, and only those;
a run is acknowledged on its issue and its end reported there (once); a redelivery, or a
second request while the issue's run is in progress, starts nothing new, after a restart
too.

The trigger's blueprint is the minion behind a gate, so that each test decides when its
run goes on (approve) or ends (cancel), and nothing depends on how fast a run is.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.service.github_triggers import (  # noqa: F401 - its fixtures
    GOLEM_LOGIN,
    SERVER_ENV,
    TOKEN,
    GitHub,
    acknowledged,
    commented,
    comments_when,
    deliver,
    gated_minion,
    github,
    key,
    labelled,
    new_repo,
    pending_of,
    remotes,
    run_to_end,
    runs_of,
    served,
    trigger_config,
)
from tests.service.polling import eventually
from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap


def test_a_labelled_issue_runs_to_a_pull_request_whose_link_is_commented(
    served: Served,  # noqa: F811 - fixtures, imported above
    key: str,  # noqa: F811 - fixtures, imported above
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "labelled")
    answer = deliver(served, "issues", labelled(repo))
    assert answer.status_code == 202, answer.text
    started = answer.json()
    assert started["status"] == "started"
    run_id = started["run_id"]
    [ack] = comments_when(github, repo, acknowledged(run_id))
    assert "labelled golem by octocat" in ack["body"]
    end = run_to_end(served, key, run_id)
    assert end["status"] == "succeeded"
    [pr] = github.pulls(repo)
    assert end["pr"]["url"] == pr["html_url"]
    assert "Closes #1" in pr["body"]
    [run] = runs_of(served, key, repo)
    assert run["request"]["repo"] == f"{remotes}/{repo}.git"
    assert (run["request"]["forge"], run["blueprint"]) == ("github", "gated-minion")
    found = github.comments(repo, 1)
    assert [c["body"].split()[:2] for c in found] == [["golem", "started"], ["golem", "opened"]]
    assert found[1]["body"] == f"golem opened {pr['html_url']}"  # the runner's; not twice


def test_a_mention_in_a_new_comment_starts_a_run_whose_cancellation_is_reported(
    served: Served,  # noqa: F811 - fixtures, imported above
    key: str,  # noqa: F811 - fixtures, imported above
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "mentioned")
    body = "@golem could you fix this? `add` is clearly wrong."
    answer = deliver(served, "issue_comment", commented(repo, body, association="COLLABORATOR"))
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    comments_when(github, repo, acknowledged(run_id))
    end = run_to_end(served, key, run_id, "cancel")
    assert end["status"] == "cancelled"
    found = comments_when(github, repo, lambda found: len(found) == 2)
    assert found[1]["body"].startswith(f"golem run `{run_id}` was cancelled")
    assert found[1]["user"]["login"] == GOLEM_LOGIN
    assert github.pulls(repo) == []


def test_deliveries_that_ask_for_nothing_start_nothing_and_say_why(
    served: Served,  # noqa: F811 - fixtures, imported above
    key: str,  # noqa: F811 - fixtures, imported above
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "unasked")
    asks = [
        ("issues", {**labelled(repo), "action": "opened"}, "only labeled"),
        ("issues", labelled(repo, label="bug"), "not the trigger's"),
        ("issues", {**labelled(repo), "issue": {"number": 1, "state": "closed"}}, "closed"),
        ("issue_comment", commented(repo, "looks like a bug to me"), "does not mention"),
        ("issue_comment", commented(repo, "@golemite, see this"), "does not mention"),
        ("issue_comment", commented(repo, "> @golem fix it\n\nno."), "does not mention"),
        ("issue_comment", commented(repo, "`@golem` is a bot"), "does not mention"),
        ("issue_comment", commented(repo, "@golem fix", action="edited"), "only new comments"),
        ("issue_comment", commented(repo, "@golem fix", association="NONE"), "collaborators"),
        ("push", {"ref": "refs/heads/main", "repository": {"full_name": repo}}, "no default"),
        (
            "push",
            {
                "ref": "refs/heads/main",
                "repository": {"full_name": repo, "default_branch": "main"},
                "after": "a" * 40,
            },
            "no automation watches",
        ),
        ("issues", {"action": "labeled", "label": {"name": "golem"}}, "names no issue"),
    ]
    for event, payload, reason in asks:
        answer = deliver(served, event, payload)
        assert answer.status_code == 202, (event, payload, answer.text)
        assert answer.json()["status"] == "ignored"
        assert reason in answer.json()["reason"], (event, payload, answer.json())
    pong = deliver(served, "ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert (pong.status_code, pong.json()["status"]) == (200, "ok")
    assert runs_of(served, key, repo) == []
    assert github.comments(repo, 1) == []


def test_golems_own_comments_and_bots_start_nothing(
    served: Served,  # noqa: F811 - fixtures, imported above
    key: str,  # noqa: F811 - fixtures, imported above
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "looped")
    run_id = deliver(served, "issues", labelled(repo)).json()["run_id"]
    for comment in comments_when(github, repo, acknowledged(run_id)):
        echoed = commented(repo, comment["body"], author=comment["user"]["login"])
        answer = deliver(served, "issue_comment", echoed)  # what GitHub sends back to us
        assert (answer.status_code, answer.json()["status"]) == (202, "ignored")
    own = deliver(served, "issue_comment", commented(repo, "@golem again", author=GOLEM_LOGIN))
    assert "golem's own account" in own.json()["reason"]
    bot = commented(repo, "@golem bump", author="renovate[bot]", kind="Bot")
    assert "is a bot" in deliver(served, "issue_comment", bot).json()["reason"]
    assert run_to_end(served, key, run_id, "cancel")["status"] == "cancelled"
    assert [r["id"] for r in runs_of(served, key, repo)] == [run_id]


def test_a_bad_or_missing_signature_is_401_and_starts_nothing(
    served: Served,  # noqa: F811 - fixtures, imported above
    key: str,  # noqa: F811 - fixtures, imported above
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "forged")
    answers = [
        deliver(served, "issues", labelled(repo), secret="not-the-secret"),  # noqa: S106
        deliver(served, "issues", labelled(repo), signature=""),
        deliver(served, "issues", labelled(repo), signature="sha256=" + "0" * 64),
        deliver(served, "issues", labelled(repo), signature="sha1=abc"),
    ]
    for answer in answers:
        assert answer.status_code == 401, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
    assert "X-Hub-Signature-256" in answers[0].json()["detail"]
    assert runs_of(served, key, repo) == []


def test_a_redelivery_or_a_second_label_while_the_run_is_in_progress_starts_nothing(
    served: Served,  # noqa: F811 - fixtures, imported above
    key: str,  # noqa: F811 - fixtures, imported above
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "redelivered")
    delivery = str(uuid.uuid4())
    first = deliver(served, "issues", labelled(repo), delivery=delivery)
    run_id = first.json()["run_id"]
    again = deliver(served, "issues", labelled(repo), delivery=delivery)
    assert again.status_code == 200
    assert (again.json()["status"], again.json()["run_id"]) == ("duplicate", run_id)
    relabelled = deliver(served, "issues", labelled(repo))
    assert relabelled.status_code == 200
    assert (relabelled.json()["status"], relabelled.json()["run_id"]) == ("running", run_id)
    assert run_to_end(served, key, run_id, "cancel")["status"] == "cancelled"
    late = deliver(served, "issues", labelled(repo), delivery=delivery)
    assert (late.json()["status"], late.json()["run_id"]) == ("duplicate", run_id)
    assert [r["id"] for r in runs_of(served, key, repo)] == [run_id]
    comments_when(github, repo, lambda found: len(found) == 2)
    assert sum(acknowledged(run_id)([c]) for c in github.comments(repo, 1)) == 2  # ack, end


def test_mentions_while_the_issues_run_runs_are_queued_per_person_masked_and_start_after_it(
    served: Served,  # noqa: F811 - fixtures, imported above
    key: str,  # noqa: F811 - fixtures, imported above
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "mentioned-meanwhile")
    first = deliver(served, "issues", labelled(repo)).json()["run_id"]
    comments_when(github, repo, acknowledged(first))
    asks = [
        deliver(served, "issue_comment", commented(repo, text))
        for text in ("@golem please", f"@golem no: use {TOKEN} instead")
    ]
    assert [(a.status_code, a.json()["status"], a.json()["run_id"]) for a in asks] == [
        (202, "queued", first), (202, "queued", first),
    ]  # fmt: skip
    relabelled = deliver(served, "issues", labelled(repo))  # a label is no request: not queued
    assert (relabelled.json()["status"], relabelled.json()["run_id"]) == ("running", first)
    [kept] = pending_of(served, f"{repo}#1")  # one per person: the later words
    assert (kept.person, kept.run_id) == ("octocat", first)
    assert kept.request.startswith("@golem no: use ")
    assert TOKEN not in kept.request
    assert run_to_end(served, key, first, "cancel")["status"] == "cancelled"
    second = eventually(
        lambda: next((r["id"] for r in runs_of(served, key, repo) if r["id"] != first), None),
        "the queued mention's run",
    )
    [ack] = [c for c in comments_when(github, repo, acknowledged(second)) if second in c["body"]]
    assert f"It answers the request octocat made while run `{first}` ran" in ack["body"]
    assert pending_of(served, f"{repo}#1") == []
    assert run_to_end(served, key, second, "cancel")["status"] == "cancelled"
    assert len(runs_of(served, key, repo)) == 2


def test_after_a_restart_redeliveries_start_nothing_and_the_end_is_still_reported(
    tmp_path: Path,
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "restarted")
    config = trigger_config(github, remotes, gated_minion(tmp_path))
    delivery = str(uuid.uuid4())
    with serving(tmp_path / "state", config=config, env=SERVER_ENV) as first:
        run_id = deliver(first, "issues", labelled(repo), delivery=delivery).json()["run_id"]
        comments_when(github, repo, acknowledged(run_id))
    with serving(tmp_path / "state", config=config, env=SERVER_ENV) as second:
        key = second.key("default")
        again = deliver(second, "issues", labelled(repo), delivery=delivery)
        assert (again.json()["status"], again.json()["run_id"]) == ("duplicate", run_id)
        other = deliver(second, "issues", labelled(repo))
        assert (other.json()["status"], other.json()["run_id"]) == ("running", run_id)
        assert run_to_end(second, key, run_id, "cancel")["status"] == "cancelled"
        found = comments_when(github, repo, lambda found: len(found) == 2)
    assert found[1]["body"].startswith(f"golem run `{run_id}` was cancelled")


def test_without_a_secret_every_delivery_is_refused(
    tmp_path: Path,
    github: GitHub,  # noqa: F811 - fixtures, imported above
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    repo = new_repo(github, remotes, "unguarded")
    config = trigger_config(github, remotes, gated_minion(tmp_path))
    env = {"TRIGGER_TEST_GITHUB_TOKEN": TOKEN}
    with serving(tmp_path / "state", config=config, env=env) as server:
        answers = [
            deliver(server, "ping", {"zen": "hi"}),
            deliver(server, "issues", labelled(repo)),
            deliver(server, "issues", labelled(repo), secret=""),
        ]
        with server.admin() as admin:
            runs = admin.get("/v1/runs").json()
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert "$TRIGGER_TEST_WEBHOOK_SECRET" in answer.json()["detail"]
    assert runs == []
    assert github.comments(repo, 1) == []


def test_the_trigger_uses_its_tenants_own_token_and_the_servers_only_where_shared(
    tmp_path: Path,
    remotes: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    own_token = "ghp_triggerTenantOwn0123456789abcdef"  # noqa: S105 - a test token
    unshared = "\n[server]\nshared_forge_tenants = []\n"
    with GitHub(token=own_token) as github:  # noqa: F811 - fixtures, imported above
        repo = new_repo(github, remotes, "own-token")
        config = trigger_config(github, remotes, gated_minion(tmp_path)) + unshared
        with serving(tmp_path / "state", config=config, env=SERVER_ENV) as server:
            refused = deliver(server, "issues", labelled(repo))
            key = server.key("default")
            with server.client(key) as client:
                put = client.put("/v1/credentials/github", json={"token": own_token})
            assert put.status_code == 200, put.text
            started = deliver(server, "issues", labelled(repo))
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            comments_when(github, repo, acknowledged(run_id))
            assert run_to_end(server, key, run_id, "cancel")["status"] == "cancelled"
            comments_when(github, repo, lambda found: len(found) == 2)
        assert refused.status_code == 503, refused.text
        assert "tenant 'default' has none" in refused.json()["detail"]
        assert "PUT /v1/credentials/github" in refused.json()["detail"]
        assert {r.headers.get("authorization") for r in github.requests} == {
            f"Bearer {own_token}"
        }  # the server's token was never sent: the tenant is not among the shared
