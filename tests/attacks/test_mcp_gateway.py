"""A filtered box and a step's MCP gateway on the host: the box reaches the gateway only
through the route golem registered for its session, gets only the step's tools, and never
holds the gateway's token; the host's loopback stays closed to it otherwise."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from golem.agent import make_tools
from golem.context.toolshed.gateway import serve_tools
from golem.core import GolemConfig
from golem.core.errors import ConfigError
from golem.sandbox import Box, Engine, ExecRequest, LocalBox, RemoteEngine
from tests.context.mcp_box_client import SCRIPT
from tests.service.served import Served
from tests.traces import traces_in_box

pytestmark = pytest.mark.bwrap


@pytest.fixture
async def filtered_box(engine: Engine) -> AsyncIterator[LocalBox]:
    async with engine.session(engine.spec(network="filtered", timeout=60)) as box:
        assert isinstance(box, LocalBox)
        await box.put_file("/workspace/notes.txt", "hello from the box\n")
        yield box


async def _mcp(box: Box, url: str, method: str, params: object = None, *extra: str) -> str:
    argv = ["python3", "-", url, method, json.dumps(params or {}), *extra]
    result = await box.execute(ExecRequest(cmd=argv, stdin=SCRIPT.encode()))
    return (result.stdout + result.stderr).decode()


async def _curl(box: Box, *args: str) -> str:
    result = await box.execute(["curl", "-sS", "-m", "20", "-o", "-", "-w", " %{http_code}", *args])
    return (result.stdout + result.stderr).decode()


async def test_the_box_calls_the_steps_tools_through_its_route(filtered_box: LocalBox) -> None:
    async with serve_tools(make_tools(["read"]), filtered_box) as gateway:
        with filtered_box.host_route(gateway.url, gateway.token) as url:
            listed = await _mcp(filtered_box, url, "tools/list")
            read = {"name": "read", "arguments": {"path": "notes.txt"}}
            called = await _mcp(filtered_box, url, "tools/call", read)
            bash = {"name": "bash", "arguments": {"command": "id"}}
            refused = await _mcp(filtered_box, url, "tools/call", bash)
            env = (await filtered_box.execute(["env"])).stdout.decode()
            traces = await traces_in_box(filtered_box, gateway.token)
    assert listed.startswith("200 ")
    assert [tool["name"] for tool in json.loads(listed[4:])["result"]["tools"]] == ["read"]
    assert called.startswith("200 ")
    assert "hello from the box" in called
    assert '"isError":true' in refused.replace(" ", "")
    assert "no tool 'bash'" in refused
    assert gateway.token not in env
    assert traces == []  # in no process, environment or file of the box
    log = await filtered_box.network_log()
    assert any(event.allowed and event.rule == "golem host route" for event in log)


async def test_a_box_sending_its_own_token_is_still_given_the_real_one_only_by_the_route(
    filtered_box: LocalBox,
) -> None:
    async with serve_tools(make_tools(["read"]), filtered_box) as gateway:
        with filtered_box.host_route(gateway.url, gateway.token) as url:
            forged = await _mcp(
                filtered_box, url, "tools/list", None, "-HAuthorization:Bearer forged"
            )
    assert forged.startswith("200 ")  # the proxy replaced the box's header with its own


async def test_the_box_cannot_reach_the_gateway_without_the_route(filtered_box: LocalBox) -> None:
    async with serve_tools(make_tools(["read"]), filtered_box) as gateway:
        port = gateway.url.split(":")[2].split("/")[0]
        direct = await _curl(filtered_box, "--noproxy", "*", f"http://127.0.0.1:{port}/mcp")
        proxied = await _curl(
            filtered_box, "--noproxy", "", "-x", "http://127.0.0.1:3128",
            f"http://127.0.0.1:{port}/mcp",
        )  # fmt: skip
        tunnel = await _curl(
            filtered_box, "--noproxy", "", "-p", "-x", "http://127.0.0.1:3128",
            f"http://127.0.0.1:{port}/mcp",
        )  # fmt: skip
        with filtered_box.host_route(gateway.url, gateway.token) as url:
            guessed = url.rsplit("/", 1)[0] + "/host-0123456789abcdef/mcp"
            other = await _mcp(filtered_box, guessed, "tools/list")
            after_route = url
        closed = await _mcp(filtered_box, after_route, "tools/list")
    assert direct.endswith(" 000") or "Connection refused" in direct or "Failed" in direct
    assert proxied.endswith(" 403")
    assert "CONNECT tunnel failed, response 403" in tunnel
    for refused in (other, closed):  # a refused request with a body may be cut, not answered
        assert refused.startswith(("400 ", "0 "))
        assert '"tools"' not in refused
    assert gateway.token not in direct + proxied + tunnel + other + closed


async def test_a_box_without_filtered_network_gets_no_route(engine: Engine) -> None:
    async with engine.session(engine.spec(network="none")) as box:
        assert isinstance(box, LocalBox)
        with pytest.raises(ConfigError, match="filtered"):
            box.host_route("http://127.0.0.1:1/", "t").__enter__()


async def test_a_path_on_the_route_never_changes_where_it_goes(filtered_box: LocalBox) -> None:
    async with serve_tools(make_tools(["read"]), filtered_box) as gateway:
        port = int(gateway.url.split(":")[2].split("/")[0])
        with filtered_box.host_route(gateway.url, gateway.token) as url:
            tricks = ["/@127.0.0.1:22/", "/../../x", "//127.0.0.1:22/", "/%2e%2e/%2e%2e/"]
            answers = [await _curl(filtered_box, "--path-as-is", url + t) for t in tricks]
        log = await filtered_box.network_log()
    assert all(answer.endswith(" 404") for answer in answers), answers  # the gateway's 404
    routed = [event for event in log if event.rule == "golem host route"]
    assert len(routed) == len(tricks)
    assert {(event.address, event.port) for event in routed} == {("127.0.0.1", port)}


async def test_a_box_on_a_golem_server_gets_no_host_route(
    config: GolemConfig, served: Served
) -> None:
    async with (
        RemoteEngine(served.url, served.tenant_key("tools"), config=config) as remote,
        remote.session() as box,
    ):
        with pytest.raises(ConfigError, match="runs on a golem server"):
            box.host_route("http://127.0.0.1:1/mcp", "t").__enter__()
