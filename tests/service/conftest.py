"""One `golem serve` of the default configuration for every module of tests/service that
needs no other: each test in tenants of its own, each module stopping what its tenants left
going (a module that needs another configuration defines its own ``served``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.service.served import Served, serving


@pytest.fixture(scope="session")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("plain") / "state") as server:
        yield server


@pytest.fixture(scope="module")
def served(plain_server: Served) -> Iterator[Served]:
    """The session's default server, left by this module as it found it."""
    since = len(plain_server.keys_made)
    yield plain_server
    plain_server.tidy(since)
