"""Attacks on the install box's egress: a repository's install runs its own code online.

It tries to use the operator's brokered credentials (push with the operator's token), to
hang golem's proxy with a pathological pattern, to slip a look-alike host past an
unanchored one, and to widen the install's egress where the operator said no.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.checks import RepoConventions
from golem.core import GolemConfig, host_name_patterns, load_config
from golem.core.network import EgressPolicy, NetworkConfig
from golem.core.server_config import RolePolicy
from golem.core.spec import BoxSpec
from golem.sandbox import LocalEngine, spec_payload
from golem.sandbox.egress import EgressProxy, make_resolver
from golem.service.policy import check_spec
from golem.store import SqlStore, Store
from tests.attacks.secrets_upstream import EchoUpstream
from tests.blueprint.install_runs import python_conventions, python_repo, run
from tests.blueprint.registries import ADDRESS, PYPI, LocalRegistries, demo_registries

BASIC = "golem-operator-token-" + secrets.token_hex(12)


# Host names, not regexes ------------------------------------------------------------------


@pytest.mark.parametrize("hostile", ["^(a|aa)+$", r"pypi\.org", "(pypi", "*", "*.com", "a.*.b.c"])
def test_a_repository_names_no_regex_nor_a_wildcard_over_a_whole_domain(hostile: str) -> None:
    with pytest.raises(ValueError, match=r"host name|labels after it"):
        RepoConventions(registries=[hostile], source="a repository")


def test_a_named_host_allows_that_host_only_and_a_glob_only_names_below_its_suffix() -> None:
    names = ["pypi.org", "*.corp.example"]
    policy = EgressPolicy(allow=host_name_patterns(names), ports=[443])
    allowed = {
        host: policy.check_name(host, 443).allowed
        for host in (
            "pypi.org", "PyPI.org.", "pypi.org.evil.com", "evilpypi.org", "pypiXorg",
            "mirror.corp.example", "a.b.corp.example", "corp.example", "corp.example.evil.com",
            "evilcorp.example",
        )
    }  # fmt: skip
    assert [host for host, ok in allowed.items() if ok] == [
        "pypi.org", "PyPI.org.", "mirror.corp.example", "a.b.corp.example",
    ]  # fmt: skip


def test_a_host_name_longer_than_dns_allows_is_refused_before_any_pattern_sees_it() -> None:
    policy = EgressPolicy(allow=[r"^a+\.example$"], ports=[443])
    assert policy.check_name("a" * 240 + ".example", 443).allowed
    refused = policy.check_name("a" * 260 + ".example", 443)
    assert (refused.allowed, refused.rule) == (False, "host name longer than 253")


async def test_the_proxy_refuses_a_made_up_overlong_name_and_a_look_alike_host() -> None:
    proxy = EgressProxy(
        EgressPolicy(allow=host_name_patterns(["*.corp.example", "pypi.org"]), ports=[443]),
        resolver=make_resolver(NetworkConfig()),
        ca=None,
        upstream_tls=None,
        own_addresses=frozenset(),
    )
    port = await proxy.start_tcp()
    try:
        statuses = [
            await connect(port, host)
            for host in ("a." * 130 + "corp.example", "pypi.org.evil.example")
        ]
    finally:
        await proxy.close()
    assert [status.split(b" ")[1] for status in statuses] == [b"403", b"403"]
    assert [entry.rule for entry in proxy.log] == [
        "host name longer than 253", "not in allow list"
    ]  # fmt: skip


async def connect(port: int, host: str) -> bytes:
    """The status line the proxy answers a CONNECT to ``host``:443 with."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
        await writer.drain()
        return await reader.readline()
    finally:
        writer.close()


def test_a_box_without_credentials_reaches_a_server_as_asked_and_any_key_may_ask_it() -> None:
    install = BoxSpec(network="filtered").model_copy(update={"credentials": False})
    asked = spec_payload(BoxSpec.model_validate({"network": "filtered", "credentials": False}))
    assert asked == {"network": "filtered", "credentials": False}
    check_spec(install, asked, RolePolicy(), "user", "")  # taking brokering away: allowed
    assert BoxSpec().credentials  # every other box brokers as before


# The install box and the operator's credentials -----------------------------------------


@pytest.fixture
def registries(reachable_dir: Path) -> Iterator[LocalRegistries]:
    with demo_registries(reachable_dir / "registries") as registries:
        yield registries


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[EchoUpstream, int]]:
    """The operator's forge, as far as the box can tell: it echoes what authorised a call."""
    echo = EchoUpstream()
    port = await echo.start(ADDRESS)
    yield echo, port
    await echo.close()


def operator_config(
    state: Path, registries: LocalRegistries, port: int, **dependencies: object
) -> GolemConfig:
    """The engine's egress allows the operator's forge (other.test), which a [[credentials]]
    entry brokers (basic auth, as for git pushes)."""
    data = registries.engine_config(state)
    engine = data["engine"]
    assert isinstance(engine, dict)
    engine["defaults"]["egress"]["allow"] = [r"^other\.test$"]
    engine["defaults"]["egress"]["ports"] = [registries.port, port]
    data["credentials"] = [
        {"name": "forge", "host": r"^other\.test$", "auth": "basic", "value": BASIC}
    ]
    data["dependencies"] = dependencies
    return load_config(data, files=[])


@pytest.fixture
async def store(tmp_path: Path, registries: LocalRegistries) -> AsyncIterator[Store]:
    store = await SqlStore.open(load_config(registries.engine_config(tmp_path / "db"), files=[]))
    yield store
    await store.close()


@pytest.mark.bwrap
async def test_the_install_box_gets_no_brokered_credential(
    tmp_path: Path,
    store: Store,
    registries: LocalRegistries,
    upstream: tuple[EchoUpstream, int],
    reachable_dir: Path,
) -> None:
    echo, port = upstream
    config = operator_config(tmp_path / "state", registries, port)
    remote = python_repo(reachable_dir)
    call = f"curl -sS -o /dev/null http://other.test:{port}/case/identity"
    conventions = python_conventions(registries)
    conventions = conventions.model_copy(update={"install": [call, *conventions.install]})
    async with LocalEngine(config) as engine:
        state = await run(config, engine, store, remote, conventions)
    assert [r.passed for r in state.prepared] == [True, True, True], state.error
    assert echo.seen == [b""]  # it called the forge, which saw no credential
    assert state.status == "succeeded", state.error


@pytest.mark.bwrap
async def test_an_operator_who_refuses_repository_registries_keeps_the_install_to_known_ones(
    tmp_path: Path,
    store: Store,
    registries: LocalRegistries,
    upstream: tuple[EchoUpstream, int],
    reachable_dir: Path,
) -> None:
    _, port = upstream
    config = operator_config(
        tmp_path / "state", registries, port, repository_registries=False
    )  # the repository's pypi.test is not a registry golem knows for python
    remote = python_repo(reachable_dir)
    conventions = python_conventions(registries)
    assert conventions.registries == [PYPI]
    async with LocalEngine(config) as engine:
        state = await run(config, engine, store, remote, conventions)
    assert state.status == "escalated"
    assert state.error is not None
    assert "dependency install" in state.error
    events = await store.runs.events(state.id)
    notes = [e.data for e in events if "ignored the repository's registries" in e.data]
    assert len(notes) == 1
    assert PYPI in notes[0]
    assert not any("golemdemo" in path for path in registries.requests)
