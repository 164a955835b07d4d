"""Session parity: LocalEngine and RemoteEngine are both a ``golem.sandbox.Engine``, and the
same code runs on this machine's engine and on a golem server's with the same results
(every scenario of the engine contract, tests/sandbox/engine_contract.py, runs on both
through ``any_engine``, the server a real one on loopback); the server's errors come back
as the same GolemError classes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.core.errors import (
    ConfigError,
    PolicyViolation,
    RemoteError,
    SessionNotFound,
)
from golem.sandbox import Engine, ExecResult, LocalEngine, RemoteEngine, SyncEngine, make_engine
from tests.sandbox.binary_output import (
    ERR_PAYLOAD,
    PAYLOAD,
    WRITER,
)
from tests.sandbox.engine_contract import Scenario, contract
from tests.service.served import Served, fresh_tenant

pytestmark = pytest.mark.bwrap


@pytest.fixture(params=["local", "remote"])
async def any_engine(request: pytest.FixtureRequest, config: GolemConfig) -> AsyncIterator[Engine]:
    """Each implementation of the Engine protocol: this machine's (LocalEngine), and a
    server's through RemoteEngine."""
    if request.param == "local":
        async with LocalEngine(config) as engine:
            yield engine
        return
    served: Served = request.getfixturevalue("served")
    async with RemoteEngine(served.url, served.tenant_key("parity"), config=config) as remote:
        yield remote


@contract
async def test_each_engine_keeps_the_engine_contract(
    any_engine: Engine, scenario: Scenario, tmp_path: Path
) -> None:
    await scenario(any_engine, tmp_path)


async def test_a_session_ended_elsewhere_is_closed_once_the_server_says_so(
    served: Served, config: GolemConfig
) -> None:
    key = served.tenant_key("ended-elsewhere")
    async with (
        RemoteEngine(served.url, key, config=config) as mine,
        RemoteEngine(served.url, key, config=config) as theirs,
    ):
        box = await mine.create_session()
        assert (await box.execute("true")).exit_code == 0  # its call channel is open
        await theirs.remove_session(box.id)
        assert not box.closed  # nothing said so yet
        with pytest.raises(SessionNotFound):
            await box.execute("true")
        assert box.closed


async def test_a_clients_own_golem_labels_are_not_asked_of_the_server(
    served: Served, config: GolemConfig
) -> None:
    """A local run marks its box ``golem.run``: through a client's RemoteEngine that mark
    stays behind (the server's labels are the server's; it would refuse them), whatever
    ``golem.*`` name it has, and the tenant's own labels go; a key that may set the server's
    labels (``server_labels``, a control plane's) sends them, and a user's is refused."""
    marks = {"golem.run": "run-x", "golem.tenant": "someone-else", "golem.": "", "mine": "1"}
    tenant = fresh_tenant("labels")
    key = served.key(tenant)
    async with (
        RemoteEngine(served.url, key, config=config) as remote,
        remote.session(remote.spec(labels=marks)) as box,
    ):
        assert (await box.execute("true")).exit_code == 0
        [info] = await remote.boxes()
        assert info.labels == {"mine": "1", "golem.tenant": tenant}  # the server's mark
    async with RemoteEngine(served.url, key, config=config, server_labels=True) as plane:
        with pytest.raises(PolicyViolation, match=r"golem\.run, golem\.tenant"):
            await plane.create_session(plane.spec(labels=marks))


async def test_the_servers_refusals_come_back_as_errors(
    served: Served, config: GolemConfig
) -> None:
    async with RemoteEngine(served.url, served.tenant_key("parity"), config=config) as remote:
        # the server's own error class comes back (one error tree on both sides)
        with pytest.raises(PolicyViolation, match=r"server\.policies\.user\.networks") as refused:
            await remote.create_session(remote.spec(network="host"))
        assert refused.value.http_status == 403
        with pytest.raises(SessionNotFound, match="no session"):
            await remote.get_session("box-000000000000")
    async with RemoteEngine(served.url, "golem_bad_key", config=config) as wrong:
        with pytest.raises(RemoteError, match="not valid") as unauthorized:
            await wrong.execute("true")
        assert unauthorized.value.http_status == 401


async def test_an_unreachable_server_is_a_clear_error(config: GolemConfig) -> None:
    async with RemoteEngine("http://127.0.0.1:9", "k", config=config) as remote:
        with pytest.raises(RemoteError, match="cannot reach the golem server"):
            await remote.execute("true")


async def test_make_engine_follows_the_configuration(
    config: GolemConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(make_engine(config), LocalEngine)
    remote = config.model_copy(
        update={"remote": config.remote.model_copy(update={"url": "http://h:1"})}
    )
    monkeypatch.delenv("GOLEM_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="GOLEM_API_KEY"):
        make_engine(remote)
    monkeypatch.setenv("GOLEM_API_KEY", "golem_x_y")
    engine = make_engine(remote)
    assert isinstance(engine, RemoteEngine)
    assert engine.url == "http://h:1"
    await engine.close()


def test_a_scripts_sync_engine_follows_remote_url_too(
    served: Served, config: GolemConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SyncEngine`` (scripts) takes its engine from ``make_engine`` as every command does:
    with ``[remote] url`` set its sessions are the server's, for the key's tenant."""
    key = served.tenant_key("script")
    monkeypatch.setenv("GOLEM_API_KEY", key)
    remote = config.model_copy(
        update={"remote": config.remote.model_copy(update={"url": served.url})}
    )
    with SyncEngine(remote) as engine, engine.session() as box:
        assert box.execute("echo from a script").stdout == b"from a script\n"
        with served.client(key) as client:
            listed = client.get("/v1/sessions").json()
        assert [s["id"] for s in listed] == [box.id]


def test_golem_exec_through_a_server_writes_the_boxs_bytes(served: Served, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(
        GOLEM_STATE_DIR=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        GOLEM_REMOTE__URL=served.url,
        GOLEM_API_KEY="golem_not_a_key",
    )

    def golem(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, "-m", "golem", "exec", *args]
        return subprocess.run(
            command, input=stdin, capture_output=True, env=env, timeout=120, check=False
        )

    refused = golem("--", "true")  # the server answers: the call went there
    assert refused.returncode != 0
    assert b"not valid" in refused.stderr
    env["GOLEM_API_KEY"] = served.tenant_key("parity")
    done = golem("-c", WRITER)
    assert (done.stdout, done.stderr, done.returncode) == (PAYLOAD, ERR_PAYLOAD, 0)
    assert golem("--", "cat", stdin=PAYLOAD).stdout == PAYLOAD
    as_json = ExecResult.model_validate_json(golem("--json", "-c", WRITER).stdout)
    assert (as_json.stdout, as_json.stderr) == (PAYLOAD, ERR_PAYLOAD)
