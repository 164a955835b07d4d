"""Automations against a real `golem serve` (the local forge, runs held at a gate so that
each test decides when one ends): a cron automation fires its slot exactly once across
restarts (the slot passed while no server ran: the store's record of when it first had the
automation is moved back, as downtime would leave it); an inbound webhook starts one run
per Idempotency-Key and none while the last one runs; failed GitHub Actions runs and
GitLab pipelines on the default branch fire the automations watching them, once per
delivery; admins make and delete automations through the API, golem.toml's stay its own."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from golem.service.automations import Automation
from golem.service.documents import Shelf
from golem.store import SqlStore
from tests.service.automation_kit import (  # noqa: F401 - its fixtures
    GITHUB_SECRET,
    GITLAB_SECRET,
    automation,
    remote,
    when,
)
from tests.service.github_triggers import gated_minion
from tests.service.gitlab_triggers import payload as gitlab_payload
from tests.service.served import Served, launch, serving
from tests.service.webhooks import deliver_github

pytestmark = pytest.mark.bwrap

HOOK_SECRET = "automation-hook-secret-0123456789"  # noqa: S105 - a test secret
ENV = {
    "AUTOMATION_TEST_HOOK_SECRET": HOOK_SECRET,
    "AUTOMATION_TEST_GITHUB_SECRET": GITHUB_SECRET,
    "AUTOMATION_TEST_GITLAB_SECRET": GITLAB_SECRET,
}
SIGNED_BY = {"secret_env": "AUTOMATION_TEST_HOOK_SECRET"}
UNSIGNED = {"secret_env": "AUTOMATION_TEST_UNSET"}  # a variable the server does not have
YEAR = 365 * 86400.0


def signed(body: bytes, secret: str = HOOK_SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, remote: Path) -> Iterator[Served]:  # noqa: F811 - fixtures, imported above
    home = tmp_path_factory.mktemp("automations")
    gated = gated_minion(home)
    config = f"""
[server]
max_runs = 8

[server.github]
secret_env = "AUTOMATION_TEST_GITHUB_SECRET"

[server.gitlab]
secret_env = "AUTOMATION_TEST_GITLAB_SECRET"

{automation("inbound", "hooks", remote, gated, webhook=True,
            **SIGNED_BY, task="Deploy {service}: {payload}")}
{automation("unsigned", "hooks", remote, gated, webhook=True,
            **UNSIGNED, task="Never")}
{automation("red-main", "events", remote, gated, event="github.workflow_run.failed",
            watch="octo/app", task="Fix {workflow} on {branch}: {url} ({sha})")}
{automation("red-pipeline", "events", remote, gated, event="gitlab.pipeline.failed",
            watch="gitlab-org/gitlab-test", task="Fix pipeline {pipeline_id}: {url}")}
{automation("by-hand", "manual", remote, gated, cron="0 0 29 2 1", task="Chores of {date}")}
"""  # fmt: skip
    with serving(home / "state", config=config, env=ENV) as server:
        yield server


def hook(served: Served, body: bytes, *, key: str | None, signature: str | None,
         name: str = "inbound") -> httpx.Response:  # fmt: skip
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    if signature is not None:
        headers["X-Golem-Signature-256"] = signature
    with served.client() as client:
        return client.post(f"/v1/automations/{name}/webhook", content=body, headers=headers)


def cancel_all(served: Served, tenant: str) -> None:
    with served.client(served.key(tenant, "trusted")) as client:
        for run in client.get("/v1/runs").json():
            if run["status"] in ("queued", "running", "waiting"):
                client.post(f"/v1/runs/{run['id']}/cancel")
        when(lambda: client.get("/v1/runs").json(),
             lambda runs: all(r["status"] == "cancelled" for r in runs))  # fmt: skip


def test_an_inbound_webhook_starts_one_run_per_idempotency_key(served: Served) -> None:
    body = json.dumps({"service": "billing", "version": 7}).encode()
    first = hook(served, body, key="deploy-1", signature=signed(body))
    again = hook(served, body, key="deploy-1", signature=signed(body))
    assert first.status_code == 202, first.text
    assert first.json()["status"] == "started"
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "duplicate"
    assert again.json()["run_id"] == first.json()["run_id"]
    while_running = hook(served, body, key="deploy-2", signature=signed(body))
    assert while_running.json()["status"] == "skipped"
    assert "still in progress" in while_running.json()["reason"]
    with served.client(served.key("hooks", "trusted")) as client:
        runs = client.get("/v1/runs").json()
        shown = client.get("/v1/automations/inbound").json()
    assert [run["id"] for run in runs] == [first.json()["run_id"]]
    assert runs[0]["request"]["task"].startswith('Deploy billing: {"service": "billing"')
    assert shown["last_run"]["run_id"] == first.json()["run_id"]
    assert shown["last_run_status"] in ("queued", "running", "waiting")
    assert shown["next_run"] is None  # no schedule
    assert [skip["key"] for skip in shown["skipped"]] == ["deploy-2"]
    cancel_all(served, "hooks")
    after = hook(served, body, key="deploy-2", signature=signed(body))  # the last one ended
    assert after.json()["status"] == "started"
    cancel_all(served, "hooks")


def test_an_inbound_webhook_refuses_what_it_cannot_trust_or_use(served: Served) -> None:
    body = json.dumps({"service": "billing"}).encode()
    with served.client(served.key("hooks", "trusted")) as client:
        before = client.get("/v1/runs").json()
    refusals = [
        (hook(served, body, key="k-1", signature=None), 401),
        (hook(served, body, key="k-1", signature=signed(body, "not-the-secret")), 401),
        (hook(served, body + b" ", key="k-1", signature=signed(body)), 401),  # body changed
        (hook(served, body, key=None, signature=signed(body)), 400),
        (hook(served, body, key="bad key/..", signature=signed(body)), 400),
        (hook(served, b"[1]", key="k-1", signature=signed(b"[1]")), 400),
        (hook(served, b"{}", key="k-1", signature=signed(b"{}")), 422),  # no {service}
        (hook(served, body, key="k-1", signature=signed(body), name="unsigned"), 503),
        (hook(served, body, key="k-1", signature=signed(body), name="red-main"), 404),
        (hook(served, body, key="k-1", signature=signed(body), name="nothing"), 404),
    ]
    for answer, code in refusals:
        assert answer.status_code == code, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
    assert "{service}" in refusals[6][0].json()["detail"]
    assert "$AUTOMATION_TEST_UNSET" in refusals[7][0].json()["detail"]
    with served.client(served.key("hooks", "trusted")) as client:
        assert client.get("/v1/runs").json() == before  # nothing started


def workflow_run(
    repo: str, *, branch: str = "main", conclusion: str = "failure", head: str | None = None
) -> dict[str, Any]:
    """A ``workflow_run`` delivery as GitHub sends it (the fields golem reads): of the
    repository's ``branch``, or of ``head``'s (a fork's pull request)."""
    return {
        "action": "completed",
        "workflow_run": {
            "id": 30433642, "name": "Build", "head_branch": branch,
            "head_repository": {"full_name": head or repo}, "event": "push",
            "head_sha": "acb5820ced9479c074f688cc328bf03f341a511d", "status": "completed",
            "conclusion": conclusion, "html_url": f"https://github.com/{repo}/actions/runs/30433642",
        },
        "repository": {"full_name": repo, "default_branch": "main"},
        "sender": {"login": "octocat", "type": "User"},
    }  # fmt: skip


def to_github(served: Served, body: dict[str, Any], delivery: str) -> httpx.Response:
    return deliver_github(served, "workflow_run", body, secret=GITHUB_SECRET, delivery=delivery)


def test_a_failed_actions_run_on_the_default_branch_fires_its_automation_once(
    served: Served,
) -> None:
    delivery = str(uuid.uuid4())
    fired = to_github(served, workflow_run("octo/app"), delivery)
    assert fired.status_code == 202, fired.text
    assert fired.json()["status"] == "started"
    redelivered = to_github(served, workflow_run("octo/app"), delivery)
    assert redelivered.status_code == 200, redelivered.text
    assert redelivered.json()["status"] == "duplicate"
    ignored = [
        to_github(served, workflow_run("octo/app", branch="feature"), str(uuid.uuid4())),
        to_github(served, workflow_run("octo/app", conclusion="success"), str(uuid.uuid4())),
        to_github(served, workflow_run("octo/other"), str(uuid.uuid4())),
        to_github(served, workflow_run("octo/app", head="mallory/app"), str(uuid.uuid4())),
    ]
    assert [answer.json()["status"] for answer in ignored] == ["ignored"] * 4
    assert "not the default branch" in ignored[0].json()["reason"]
    assert "no automation watches octo/other" in ignored[2].json()["reason"]
    assert "of mallory/app's 'main', not the repository's own" in ignored[3].json()["reason"]
    with served.client(served.key("events", "trusted")) as client:
        runs = client.get("/v1/runs").json()
    assert [run["id"] for run in runs] == [fired.json()["run_id"]]
    assert runs[0]["request"]["task"] == (
        "Fix Build on main: https://github.com/octo/app/actions/runs/30433642 "
        "(acb5820ced9479c074f688cc328bf03f341a511d)"
    )
    cancel_all(served, "events")
    pipeline = gitlab_payload("pipeline_hook")
    headers = {
        "Content-Type": "application/json", "X-Gitlab-Event": "Pipeline Hook",
        "X-Gitlab-Token": GITLAB_SECRET, "X-Gitlab-Event-UUID": str(uuid.uuid4()),
    }  # fmt: skip
    on_a_branch = copy.deepcopy(pipeline)
    on_a_branch["object_attributes"]["ref"] = "feature"
    with served.client() as client:
        started = client.post("/v1/gitlab/webhook", content=json.dumps(pipeline), headers=headers)
        again = client.post("/v1/gitlab/webhook", content=json.dumps(pipeline), headers=headers)
        headers["X-Gitlab-Event-UUID"] = str(uuid.uuid4())
        branch = client.post("/v1/gitlab/webhook", content=json.dumps(on_a_branch), headers=headers)
    assert started.json()["status"] == "started", started.text
    assert again.json()["status"] == "duplicate"
    assert branch.json()["status"] == "ignored"
    with served.client(served.key("events", "trusted")) as client:
        task = client.get(f"/v1/runs/{started.json()['run_id']}").json()["request"]["task"]
    assert task == "Fix pipeline 31: http://192.168.64.1:3005/gitlab-org/gitlab-test/-/pipelines/31"
    cancel_all(served, "events")


def test_admins_make_change_and_delete_automations_and_golem_toml_keeps_its_own(
    served: Served,
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    made = {
        "name": "weekly", "tenant": "admin-made", "repo": str(remote), "cron": "0 6 * * 1",
        "timezone": "America/New_York", "task": "Weekly chores of {date}", "budget_usd": 2.0,
    }  # fmt: skip
    with served.admin() as admin, served.client(served.key("admin-made", "user")) as user:
        assert user.put("/v1/automations/weekly", json=made).status_code == 403
        put = admin.put("/v1/automations/weekly", json=made)
        assert put.status_code == 200, put.text
        assert put.json()["origin"] == "api"
        assert put.json()["next_run"] > time.time()
        assert [a["name"] for a in user.get("/v1/automations").json()] == ["weekly"]
        changed = admin.put("/v1/automations/weekly", json={**made, "cron": "0 7 * * 1"})
        assert changed.json()["definition"]["cron"] == "0 7 * * 1"
        assert (
            admin.put("/v1/automations/inbound", json={**made, "name": "inbound"}).status_code
            == 409
        )
        assert admin.delete("/v1/automations/inbound").status_code == 409
        assert admin.put("/v1/automations/other", json=made).status_code == 422  # names differ
        bad = admin.put("/v1/automations/weekly", json={**made, "cron": "61 * * * *"})
        assert bad.status_code == 422
        assert user.delete("/v1/automations/weekly").status_code == 403
        assert admin.delete("/v1/automations/weekly").status_code == 204
        assert user.get("/v1/automations/weekly").status_code == 404
        every = {a["name"] for a in admin.get("/v1/automations").json()}
    assert {"inbound", "unsigned", "red-main", "red-pipeline", "by-hand"} <= every
    with served.client(served.key("nobody", "user")) as stranger:
        assert stranger.get("/v1/automations").json() == []
        assert stranger.get("/v1/automations/inbound").status_code == 404


def test_an_automation_is_fired_by_hand_and_never_overlaps(served: Served) -> None:
    with served.client(served.key("manual", "user")) as client:
        first = client.post("/v1/automations/by-hand/run")
        second = client.post("/v1/automations/by-hand/run")
        assert first.status_code == 202, first.text
        assert first.json()["status"] == "started"
        assert second.json()["status"] == "skipped"
        assert client.post("/v1/automations/inbound/run").status_code == 404  # not its own
        shown = client.get("/v1/automations/by-hand").json()
    assert shown["last_run"]["how"] == "manual"
    assert shown["next_run"] is not None
    cancel_all(served, "manual")


async def _backdate(state_dir: Path, name: str, by: float) -> None:
    """Move back when the store first had ``name``: as if the server had been down since."""
    store = await SqlStore.connect(f"sqlite:///{state_dir / 'golem.db'}", tenant=None)
    try:

        def earlier(automation: Automation) -> Automation:
            automation.seen -= by
            return automation

        await Shelf(store, "automation", Automation).change(name, earlier)
    finally:
        await store.close()


def test_a_cron_automation_fires_its_missed_slot_exactly_once_across_restarts(
    tmp_path: Path,
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    gated = gated_minion(tmp_path)
    config = automation("yearly", "cron", remote, gated, cron="0 0 1 1 *", task="Year {date}")
    config += automation("probe", "cron", remote, gated, cron="0 0 1 1 *", task="Probe {date}")
    state = tmp_path / "state"
    server = launch(state, config=config)
    admin_key = server.admin_key
    try:
        with server.admin() as admin:
            before = admin.get("/v1/automations/yearly").json()
        assert before["last_run"] is None
        assert before["next_run"] > time.time()  # next New Year
        server.stop()
        asyncio.run(_backdate(state, "yearly", 2 * YEAR))  # down since two years
        server = launch(state, config=config, admin_key=admin_key)
        with server.admin() as admin:
            fired = when(lambda: admin.get("/v1/automations/yearly").json(),
                         lambda shown: shown["last_run"] is not None)  # fmt: skip
        server.kill()  # a crash this time; then a start after which the probe fires
        asyncio.run(_backdate(state, "probe", 2 * YEAR))
        server = launch(state, config=config, admin_key=admin_key)
        with server.admin() as admin, server.client(server.key("cron", "trusted")) as client:
            when(lambda: admin.get("/v1/automations/probe").json(),
                 lambda shown: shown["last_run"] is not None)  # fmt: skip
            after = admin.get("/v1/automations/yearly").json()
            runs = client.get("/v1/runs").json()
        listed = subprocess.run(
            [sys.executable, "-m", "golem", "automations", "ls"], env=server.env,
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
    finally:
        server.stop()
    assert after["fired"] == fired["fired"]  # its slot fired once, across both restarts
    assert len(runs) == 2  # the yearly's and the probe's
    [missed] = fired["skipped"]
    assert "earlier slot(s) since" in missed["why"]
    assert fired["last_run"]["how"] == "schedule"
    assert fired["last_run"]["key"].endswith("-01-01T00:00Z")
    assert "yearly" in listed.stdout
    assert fired["last_run"]["run_id"] in listed.stdout


def test_a_webhook_body_nested_past_the_json_depth_limit_is_a_400(served: Served) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    body = b'{"service": ' + deep + b"}"
    refused = hook(served, body, key="deep-1", signature=signed(body))
    assert refused.status_code == 400, refused.text
    assert "server.max_json_depth" in refused.json()["detail"]
