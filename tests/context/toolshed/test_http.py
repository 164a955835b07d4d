"""A real streamable-HTTP MCP server (npm's server-everything) on loopback, called from
the host: only when the run's egress policy allows it, with the brokered credential in
its header (seen by the server, through a recording relay) and nowhere else."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from golem.context.toolshed import Toolshed
from golem.core.config import GolemConfig, load_config
from golem.core.errors import ConfigError, ToolshedError
from golem.sandbox import Engine
from tests.context.toolshed.servers import RecordingProxy, everything_over_http, recording_proxy
from tests.context.toolshed.sheds import TOKEN, allowing, http_config

pytestmark = pytest.mark.bwrap


@pytest.fixture(scope="module")
def http_port() -> Iterator[int]:
    with everything_over_http() as port:
        yield port


@pytest.fixture
async def proxy(http_port: int) -> AsyncIterator[RecordingProxy]:
    async with recording_proxy(http_port) as proxy:
        yield proxy


async def test_the_server_gets_the_brokered_credential_and_the_model_never_sees_it(
    config: GolemConfig, engine: Engine, proxy: RecordingProxy
) -> None:
    url = f"http://127.0.0.1:{proxy.port}/mcp"
    shed = Toolshed(http_config(config, url, credential="tracker"))
    async with engine.session(allowing(proxy.port)) as box:
        try:
            [echo] = await shed.tools(box, ["every.echo"])
            assert echo.spec.name == "every__echo"
            result = await echo.run(box, {"message": f"the token is {TOKEN}"})
            env = await box.execute("env; cat /proc/self/environ")
        finally:
            await shed.close()
    assert f"authorization: Bearer {TOKEN}".lower() in proxy.sent.decode().lower()
    assert not result.is_error
    assert result.output == "Echo: the token is ***"
    assert TOKEN.encode() not in env.stdout


async def test_a_host_the_egress_policy_refuses_is_not_called(
    config: GolemConfig, engine: Engine, proxy: RecordingProxy
) -> None:
    shed = Toolshed(http_config(config, f"http://127.0.0.1:{proxy.port}/mcp"))
    async with engine.session({"egress": {"ports": [proxy.port]}}) as box:
        with pytest.raises(ToolshedError, match="refused by the run's egress policy: not in"):
            await shed.tools(box, ["every.echo"])
    await shed.close()
    assert proxy.sent == b""


async def test_a_credential_is_never_sent_to_a_host_its_pattern_does_not_match(
    config: GolemConfig, engine: Engine, proxy: RecordingProxy
) -> None:
    url = f"http://localhost:{proxy.port}/mcp"
    shed = Toolshed(http_config(config, url, credential="tracker"))
    async with engine.session(allowing(proxy.port)) as box:
        with pytest.raises(ConfigError, match=r"for hosts matching.*not localhost"):
            await shed.tools(box, ["every.echo"])
    await shed.close()
    assert proxy.sent == b""


async def test_the_address_the_policy_checked_is_the_one_connected_to(
    config: GolemConfig, engine: Engine, proxy: RecordingProxy
) -> None:
    """mcp.test is known only to golem's resolver (network.hosts): the call reaches the
    server only if golem connects to the address it checked, without a lookup of its own."""
    data = config.model_dump(mode="json", exclude_unset=True)
    data.setdefault("engine", {})["network"] = {"hosts": {"mcp.test": ["127.0.0.1"]}}
    data["toolshed"] = {"servers": [{"name": "every", "url": f"http://mcp.test:{proxy.port}/mcp"}]}
    shed = Toolshed(load_config(data, files=[]))
    policy = {"allow": [r"^mcp\.test$"], "allow_cidrs": ["127.0.0.1/32"], "ports": [proxy.port]}
    async with engine.session({"egress": policy}) as box:
        try:
            [echo] = await shed.tools(box, ["every.echo"])
            result = await echo.run(box, {"message": "pinned"})
        finally:
            await shed.close()
    assert result.output == "Echo: pinned"
    assert f"Host: mcp.test:{proxy.port}".lower() in proxy.sent.decode().lower()
