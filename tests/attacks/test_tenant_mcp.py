"""golem's MCP server attacked through a real `golem serve`: tenant B's key reaches for
tenant A's boxes, runs, events, gate and pull request over /mcp and finds nothing (the
REST API's 404, word for word); /mcp without a key or with a wrong one is 401 as the REST
API is; a user key asking past its policy is refused as over REST, and nothing is made."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.blueprint.repos import EXAMPLES, make_remote
from tests.service.mcp_clients import call, over_http, refused
from tests.service.served import Served

pytestmark = pytest.mark.bwrap

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
GATED = Path(__file__).parents[1] / "service" / "dashboard_gate.yaml"
TASK = "Fix the failing tests of the calculator"
USER = "server.policies.user"


@asynccontextmanager
async def two_tenants(served: Served) -> AsyncIterator[tuple[Client, Client, str]]:
    """Clients of new tenants A and B (trusted keys: B may do all A may, but on its own),
    and B's key. Opened in the test's own task: the SDK's cancel scopes cannot span fixture
    tasks."""
    b_key = served.tenant_key("tenant-b", "trusted")
    async with (
        over_http(served.url, served.tenant_key("tenant-a", "trusted")) as tenant_a,
        over_http(served.url, b_key) as tenant_b,
    ):
        yield tenant_a, tenant_b, b_key


async def wait_for(client: Client, run_id: str, kind: str) -> None:
    """Read the run's events until one of ``kind`` (or the run's end)."""
    after = 0
    while True:
        page = await call(client, "run_events", run_id=run_id, after=after, wait=30)
        if any(event["type"] == kind for event in page["events"]) or page["ended"]:
            return
        after = page["next_after"]


async def test_another_tenants_box_is_invisible_over_mcp(served: Served) -> None:
    async with two_tenants(served) as (tenant_a, tenant_b, _):
        await _box_is_invisible(served, tenant_a, tenant_b)


async def _box_is_invisible(served: Served, tenant_a: Client, tenant_b: Client) -> None:
    box_id = (await call(tenant_a, "box_open"))["box_id"]
    try:
        assert await call(tenant_b, "box_list") == []
        for tool, extra in [
            ("box_exec", {"command": "touch /workspace/pwned"}),
            ("box_read_file", {"path": "x"}),
            ("box_write_file", {"path": "pwned", "text": "x"}),
            ("box_close", {}),
        ]:
            error = await refused(tenant_b, tool, box_id=box_id, **extra)
            assert error.endswith(
                f"404 SessionNotFound: no session {box_id!r}; see GET /v1/sessions"
            )
        with served.client(served.tenant_key("tenant-b-rest")) as rest:
            assert rest.get(f"/v1/sessions/{box_id}").json()["detail"] in error
        listed = await call(tenant_a, "box_exec", box_id=box_id, command="ls -A /workspace")
        assert listed["stdout"] == ""  # neither the exec nor the write reached A's box
    finally:
        await call(tenant_a, "box_close", box_id=box_id)


async def test_another_tenants_runs_events_gate_and_pr_are_invisible_over_mcp(
    served: Served, reachable_dir: Path
) -> None:
    async with two_tenants(served) as (tenant_a, tenant_b, b_key):
        remote = make_remote(reachable_dir)
        await _runs_are_invisible(served, tenant_a, tenant_b, b_key, remote)


async def _runs_are_invisible(
    served: Served, tenant_a: Client, tenant_b: Client, b_key: str, remote: Path
) -> None:
    done = await call(tenant_a, "run_start", run={"repo": str(remote), "task": TASK, "model": FIX})
    await wait_for(tenant_a, done["run_id"], "run_end")
    gated_run = {"repo": str(remote), "task": TASK, "model": FIX, "blueprint": str(GATED)}
    gated = await call(tenant_a, "run_start", run=gated_run)
    await wait_for(tenant_a, gated["run_id"], "gate_wait")

    assert await call(tenant_b, "run_list") == []
    for run_id in (done["run_id"], gated["run_id"]):
        for tool in (
            "run_status",
            "run_events",
            "run_pr",
            "run_approve",
            "run_reject",
            "run_cancel",
        ):
            error = await refused(tenant_b, tool, run_id=run_id)
            assert error.endswith(f"404 RunNotFound: no run {run_id!r}; see `golem runs ls`")
    with served.client(b_key) as rest:
        assert rest.get(f"/v1/runs/{gated['run_id']}").json()["detail"] in error

    status = await call(tenant_a, "run_status", run_id=gated["run_id"])
    assert status["status"] == "waiting"  # B's answers did not reach A's gate
    assert (await call(tenant_a, "run_pr", run_id=done["run_id"]))["number"] == 1
    approved = await call(tenant_a, "run_approve", run_id=gated["run_id"])
    assert approved["run_id"] == gated["run_id"]
    again = await refused(tenant_a, "run_reject", run_id=gated["run_id"])
    assert "409 RunConflict" in again


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer golem_nope_nope"}])
def test_mcp_without_a_valid_key_is_401_as_rest_is(served: Served, headers: dict[str, str]) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream", **headers}
    with httpx.Client(base_url=served.url, timeout=30) as http:
        over_mcp = http.post("/mcp", json=listing, headers=accept)
        over_rest = http.get("/v1/runs", headers=headers)
    assert over_mcp.status_code == over_rest.status_code == 401
    assert over_mcp.headers["www-authenticate"] == over_rest.headers["www-authenticate"]
    assert over_mcp.json()["detail"] == over_rest.json()["detail"]
    assert "tools" not in over_mcp.text


POLICED: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("box_open", {"spec": {"user": "root"}}, "/v1/sessions", {"spec": {"user": "root"}}),
    (
        "box_open",
        {"spec": {"network": "filtered", "egress": {"ports": [22]}}},
        "/v1/sessions",
        {"spec": {"network": "filtered", "egress": {"ports": [22]}}},
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "path", "body"), POLICED)
async def test_a_user_key_past_its_policy_is_refused_over_mcp_as_over_rest(
    served: Served, tool: str, arguments: dict[str, Any], path: str, body: dict[str, Any]
) -> None:
    key = served.tenant_key("plain")
    with served.client(key) as rest:
        over_rest = rest.post(path, json=body)
        assert over_rest.status_code == 403
        async with over_http(served.url, key) as client:
            error = await refused(client, tool, **arguments)
            assert await call(client, "box_list") == []
    assert f"403 PolicyViolation: {over_rest.json()['detail']}" in error
    assert USER in error


async def test_a_call_past_the_user_policy_is_refused_over_mcp(served: Served) -> None:
    async with over_http(served.url, served.tenant_key("plain-calls")) as client:
        box_id = (await call(client, "box_open"))["box_id"]
        try:
            error = await refused(client, "box_exec", box_id=box_id, command="true", timeout=86400)
            assert "403 PolicyViolation" in error
            assert f"{USER}.max_timeout" in error
        finally:
            await call(client, "box_close", box_id=box_id)


async def test_a_user_key_may_not_run_server_files_over_mcp(
    served: Served, reachable_dir: Path
) -> None:
    remote = make_remote(reachable_dir)
    async with over_http(served.url, served.tenant_key("plain-runs")) as client:
        run = {"repo": str(remote), "task": TASK, "model": FIX}
        error = await refused(client, "run_start", run=run)
        assert "403 PolicyViolation" in error
        assert f"{USER}.server_files" in error
        assert await call(client, "run_list") == []


def test_a_revoked_key_is_refused_at_its_next_mcp_request(served: Served) -> None:
    key = served.tenant_key("revoked")
    key_id = key.split("_")[1]
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=served.url, timeout=30) as http:
        assert http.post("/mcp", json=listing, headers=headers).status_code == 200
        with served.admin() as admin:
            assert admin.delete(f"/v1/keys/{key_id}").status_code == 204
        refused_now = http.post("/mcp", json=listing, headers=headers)
    assert refused_now.status_code == 401
    assert refused_now.json()["detail"] == "the API key is not valid, or was revoked"
