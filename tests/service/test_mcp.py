"""golem as an MCP server, driven by the official SDK's client: over streamable HTTP at a
real `golem serve`'s /mcp (the API key as bearer token) and over stdio against `golem mcp`
as a subprocess. Tools are listed, a box is opened, used and closed, and a scripted run is
followed to its pull request."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from tests.blueprint.repos import EXAMPLES, make_remote
from tests.service.mcp_clients import TOOLS, call, over_http, over_stdio, refused
from tests.service.served import Served

pytestmark = pytest.mark.bwrap

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
TASK = "Fix the failing tests of the calculator"


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


async def use_a_box(client: Client) -> None:
    """Open a box, run a command, write and read a file, close it."""
    box = await call(client, "box_open", spec={"env": {"GREETING": "hi"}})
    box_id = box["box_id"]
    assert [b["box_id"] for b in await call(client, "box_list")] == [box_id]
    greeted = await call(client, "box_exec", box_id=box_id, command="echo $GREETING")
    assert greeted["stdout"] == "hi\n"  # the spec reached the box
    ran = await call(client, "box_exec", box_id=box_id, command="echo out; echo err >&2; exit 3")
    assert (ran["exit_code"], ran["stdout"], ran["stderr"]) == (3, "out\n", "err\n")
    await call(client, "box_write_file", box_id=box_id, path="notes/a.txt", text="héllo\n")
    cat = await call(client, "box_exec", box_id=box_id, command=["cat", "notes/a.txt"])
    assert cat["stdout"] == "héllo\n"
    read = await call(client, "box_read_file", box_id=box_id, path="notes/a.txt")
    assert (read["text"], read["size"]) == ("héllo\n", len("héllo\n".encode()))
    await call(client, "box_close", box_id=box_id)
    assert await call(client, "box_list") == []
    gone = await refused(client, "box_exec", box_id=box_id, command="true")
    assert "404 SessionNotFound" in gone


async def follow_a_run_to_its_pr(client: Client, remote: Path) -> None:
    """Start a scripted run and read its events, waiting, until it ends; then its PR."""
    started = await call(client, "run_start", run={"repo": str(remote), "task": TASK, "model": FIX})
    run_id = started["run_id"]
    assert started["status"] == "queued"
    after, kinds = 0, []
    while True:
        page = await call(client, "run_events", run_id=run_id, after=after, limit=4, wait=30)
        assert len(page["events"]) <= 4
        assert [event["seq"] for event in page["events"]] == list(
            range(after + 1, after + 1 + len(page["events"]))
        )  # each page goes on where the last ended, nothing skipped
        kinds += [event["type"] for event in page["events"]]
        after = page["next_after"]
        if page["ended"]:
            break
    assert kinds[0] == "run_start"
    assert kinds[-1] == "run_end"
    status = await call(client, "run_status", run_id=run_id)
    assert status["status"] == "succeeded"
    assert status["pr_number"] == 1
    pr = await call(client, "run_pr", run_id=run_id)
    assert pr["number"] == 1
    assert "+    return a + b" in pr["diff"]
    assert [run["run_id"] for run in await call(client, "run_list")] == [run_id]


async def test_the_sdk_client_lists_golems_tools_over_http(served: Served) -> None:
    async with over_http(served.url, served.tenant_key("lister")) as client:
        listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS
    tools = {tool.name: tool for tool in listed.tools}
    assert {"box_id", "command"} <= set(tools["box_exec"].input_schema["required"])
    assert "network" in str(tools["box_open"].input_schema)  # BoxSpec's own fields
    read_only = {name for name, tool in tools.items() if tool.annotations.read_only_hint}
    assert read_only == {
        "box_list",
        "box_read_file",
        "run_status",
        "run_events",
        "run_pr",
        "run_list",
    }
    assert tools["box_close"].annotations.destructive_hint
    assert not tools["box_exec"].annotations.read_only_hint


async def test_a_box_is_opened_used_and_closed_over_http(served: Served) -> None:
    async with over_http(served.url, served.tenant_key("boxer")) as client:
        await use_a_box(client)


async def test_a_scripted_run_is_followed_to_its_pr_over_http(served: Served, remote: Path) -> None:
    async with over_http(served.url, served.tenant_key("runner", "trusted")) as client:
        await follow_a_run_to_its_pr(client, remote)


async def test_golem_errors_are_tool_errors_and_the_session_goes_on(served: Served) -> None:
    async with over_http(served.url, served.tenant_key("errors", "trusted")) as client:
        missing = await refused(client, "run_status", run_id="run-nope")
        assert "404 RunNotFound" in missing
        assert "no run 'run-nope'" in missing
        no_task = await refused(client, "run_start", run={"repo": "x"})
        assert "task or an issue" in no_task
        unknown = await refused(client, "box_open", spec={"sudo": True})
        assert "sudo" in unknown
        assert await call(client, "box_list") == []
        assert await call(client, "run_list") == []  # the session is still there


async def test_golem_mcp_over_stdio_serves_the_same_tools(
    tmp_path: Path, served: Served, remote: Path
) -> None:
    config = tmp_path / "golem.toml"
    config.write_text("")
    env = {**served.env, "GOLEM_STATE_DIR": str(tmp_path / "state")}
    async with over_stdio(env, config) as client:
        listed = await client.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        await use_a_box(client)
        await follow_a_run_to_its_pr(client, remote)
