"""The trust policy on a real `golem serve`: each rule (a role's minimum tier, a tenant's, a
repository pattern's) puts a key's sessions and runs in its tier, a stronger tier asked is
given, and a weaker one is refused with 403 naming the rule, through every way in (the
REST API's sessions, one-shot calls and runs, the MCP server's tools), with nothing started.

The gvisor tier is the gvisor backend's: a session of it answers with gVisor's kernel, not
the host's. The microvm tier is the microvm backend's: a session of it answers with its
guest's kernel. A `golem serve` cannot share the session's booted guests, so its warm pool
keeps one wiped box per shape: the module's two microvm sessions boot one guest."""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from golem.store import FINISHED
from tests.conftest import microvm_image
from tests.service.mcp_clients import over_http, text_of
from tests.service.polling import eventually
from tests.service.served import Served, serving

pytestmark = [pytest.mark.bwrap, pytest.mark.gvisor]

ROLE_RULE = "server.policies.user.min_tier"
TENANT_RULE = "server.trust.tenants.acme"
REPO_RULE = r"server.trust.repos[0] (.*/wild-[a-z]+)"


def policy_config() -> str:
    return (
        '[engine.tiers.gvisor]\ntype = "gvisor"\n'
        + f'[engine.tiers.microvm]\ntype = "microvm"\nimage = "{microvm_image()}"\n'
        + (
            "[engine.pool]\nclean = 1\n"
            '[server.policies.user]\nmin_tier = "gvisor"\ncontainers = true\n'
            '[server.trust]\ntenants = { acme = "microvm" }\n'
            '[[server.trust.repos]]\npattern = ".*/wild-[a-z]+"\nmin_tier = "gvisor"\n'
        )
    )


def cancel_to_its_end(client: httpx.Client, run_id: str) -> None:
    """Cancel a run and wait until it has ended: a running one holds one of the server's
    runners (``max_runs``, 2 by default) until its runner stops, and the next test's runs
    need them."""
    client.post(f"/v1/runs/{run_id}/cancel")
    eventually(
        lambda: client.get(f"/v1/runs/{run_id}").json()["status"] in FINISHED or None,
        f"run {run_id} cancelled to its end",
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("tiers")
    with serving(home / "state", config=policy_config()) as server:
        yield server


@pytest.fixture(scope="module")
def user(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.key("plain", "user")) as client:
        yield client


@pytest.fixture(scope="module")
def acme(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.key("acme", "trusted")) as client:
        yield client


@pytest.fixture(scope="module")
def trusted(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.key("plain-trusted", "trusted")) as client:
        yield client


def opened(client: httpx.Client, spec: dict[str, Any]) -> dict[str, Any]:
    """A session of ``spec`` (closed again at once); what the API said of it, and under
    ``kernel`` its kernel as the box says it (``uname -r``, ``/proc/version``)."""
    made = client.post("/v1/sessions", json={"spec": spec})
    assert made.status_code == 201, made.text
    info: dict[str, Any] = made.json()
    ran = client.post(
        f"/v1/sessions/{info['id']}/exec", json={"cmd": "uname -r; cat /proc/version"}
    )
    assert ran.status_code == 200, ran.text
    client.delete(f"/v1/sessions/{info['id']}")
    return {**info, "kernel": base64.b64decode(ran.json()["stdout"]).decode().splitlines()}


def assert_own_kernel(info: dict[str, Any]) -> None:
    """The session's box ran a kernel that is not this host's (the server's)."""
    release, version = info["kernel"]
    assert release != os.uname().release
    assert version != Path("/proc/version").read_text().strip()


def refused(answer: httpx.Response, rule: str, asked: str, least: str) -> None:
    """``answer`` is the policy's 403 naming ``rule``."""
    assert answer.status_code == 403, answer.text
    detail = answer.json()["detail"]
    assert f"'{asked}' is weaker than '{least}'" in detail
    assert f"({rule})" in detail


def test_a_user_keys_session_lands_on_its_roles_minimum_tier(user: httpx.Client) -> None:
    info = opened(user, {})
    assert info["spec"]["tier"] == "gvisor"
    assert (info["isolation"]["tier"], info["isolation"]["backend"]) == ("gvisor", "gvisor")
    assert_own_kernel(info)


@pytest.mark.microvm
def test_a_stronger_tier_than_the_minimum_is_given(user: httpx.Client) -> None:
    info = opened(user, {"tier": "microvm"})
    assert info["spec"]["tier"] == "microvm"
    assert (info["isolation"]["tier"], info["isolation"]["backend"]) == ("microvm", "microvm")
    assert_own_kernel(info)


WEAKER = {"tier": "container"}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/sessions", {"spec": WEAKER}),
        ("/v1/exec", {"spec": WEAKER, "request": {"cmd": "true"}}),
        ("/v1/exec/stream", {"spec": WEAKER, "request": {"cmd": "true"}}),
    ],
)
def test_a_user_key_asking_for_a_weaker_tier_is_refused_naming_its_roles_rule(
    user: httpx.Client, path: str, body: dict[str, Any]
) -> None:
    refused(user.post(path, json=body), ROLE_RULE, "container", "gvisor")
    assert user.get("/v1/sessions").json() == []


def test_a_streamed_session_asking_for_a_weaker_tier_ends_in_the_policys_problem(
    user: httpx.Client,
) -> None:
    answer = user.post("/v1/sessions/stream", json={"spec": WEAKER})
    assert answer.status_code == 200, answer.text
    assert answer.text.startswith("event: problem"), answer.text
    problem = json.loads(answer.text.split("data:", 1)[1].split("\n", 1)[0])
    assert problem["status"] == 403
    assert f"({ROLE_RULE})" in problem["detail"]
    assert user.get("/v1/sessions").json() == []


@pytest.mark.microvm
def test_a_tenants_tier_holds_for_its_every_key_whatever_its_role(acme: httpx.Client) -> None:
    info = opened(acme, {})
    assert info["spec"]["tier"] == "microvm"
    assert (info["isolation"]["tier"], info["isolation"]["backend"]) == ("microvm", "microvm")
    assert_own_kernel(info)
    refused(
        acme.post("/v1/sessions", json={"spec": {"tier": "gvisor"}}),
        TENANT_RULE,
        "gvisor",
        "microvm",
    )
    refused(
        acme.post("/v1/runs", json={"repo": "/nowhere/repo", "task": "t", "tier": "container"}),
        TENANT_RULE, "container", "microvm",
    )  # fmt: skip
    assert acme.get("/v1/runs").json() == []


def test_a_run_asking_for_a_weaker_tier_than_its_roles_is_refused_and_nothing_is_queued(
    user: httpx.Client,
) -> None:
    run = {"repo": "https://github.com/octo/x.git", "task": "t", "tier": "container"}
    refused(user.post("/v1/runs", json=run), ROLE_RULE, "container", "gvisor")
    assert user.get("/v1/runs").json() == []


def test_a_repository_patterns_tier_holds_for_runs_on_it(trusted: httpx.Client) -> None:
    wild = {"repo": "file:///nowhere/wild-thing.git", "task": "t"}
    refused(
        trusted.post("/v1/runs", json={**wild, "tier": "container"}),
        REPO_RULE,
        "container",
        "gvisor",
    )
    submitted = trusted.post("/v1/runs", json=wild)
    assert submitted.status_code == 202, submitted.text
    assert submitted.json()["tier"] == "gvisor"
    tame = trusted.post("/v1/runs", json={"repo": "file:///nowhere/tame.git", "task": "t"})
    assert tame.status_code == 202, tame.text
    assert tame.json()["tier"] is None  # no rule: the default backend's
    for run in (submitted.json(), tame.json()):
        cancel_to_its_end(trusted, run["id"])


def test_a_runs_container_engine_is_its_roles_to_give(
    user: httpx.Client, trusted: httpx.Client
) -> None:
    """server.policies.<role>.containers: a role that may gets a container engine for
    checks that need one, a role that may not (trusted, by default) does not."""
    public = {"repo": "https://93.184.216.34/octo/x.git", "task": "t"}  # no name to resolve
    given = user.post("/v1/runs", json=public)
    kept = trusted.post("/v1/runs", json={"repo": "file:///nowhere/tame.git", "task": "t"})
    for answer, client in ((given, user), (kept, trusted)):
        assert answer.status_code == 202, answer.text
        cancel_to_its_end(client, answer.json()["id"])

    assert given.json()["containers"] is True
    assert kept.json()["containers"] is False


async def test_the_mcp_tools_hold_the_same_rules(served: Served) -> None:
    key = served.key("plain-mcp", "user")
    async with over_http(served.url, key) as client:
        box = await client.call_tool("box_open", {"spec": {"tier": "container"}})
        assert box.is_error
        assert ROLE_RULE in text_of(box)
        run = {"repo": "https://github.com/octo/x.git", "task": "t", "tier": "container"}
        started = await client.call_tool("run_start", {"run": run})
        assert started.is_error
        assert ROLE_RULE in text_of(started)
        given = await client.call_tool("box_open", {"spec": {}})
        assert not given.is_error, text_of(given)
        info = given.structured_content or {}
        assert re.fullmatch(r"gvisor \((kvm|systrap|ptrace)\)", info["isolation"])
        await client.call_tool("box_close", {"box_id": info["box_id"]})
