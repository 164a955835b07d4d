"""The proxy environment of a filtered box is honoured by the ecosystems' own clients beyond
curl, git, pip and npm (tests/sandbox/test_network.py): go fetches modules through it. The
box has no DNS and no route: a module that arrives came through the proxy."""

from __future__ import annotations

import io
import json
import secrets
import shutil
import zipfile
from pathlib import Path

import pytest

from golem.sandbox import Engine
from tests.sandbox.nethosts import NetHosts
from tests.sandbox.test_network import config, policy  # noqa: F401 - the fixture, shared

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed (golang-go)"),
]

MODULE = "allowed.test/hello"


def publish_go_module(root: Path, version: str = "v1.0.0") -> str:
    """A module in the GOPROXY protocol's layout under ``root``; returns the proxy path."""
    prefix = f"goproxy-{secrets.token_hex(4)}"
    versions = root / prefix / MODULE / "@v"
    versions.mkdir(parents=True)
    go_mod = f"module {MODULE}\n\ngo 1.19\n"
    (versions / "list").write_text(f"{version}\n")
    (versions / f"{version}.info").write_text(json.dumps({"Version": version}))
    (versions / f"{version}.mod").write_text(go_mod)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr(f"{MODULE}@{version}/go.mod", go_mod)
        zipped.writestr(f"{MODULE}@{version}/hello.go", 'package hello\n\nconst Hi = "hi"\n')
    (versions / f"{version}.zip").write_bytes(archive.getvalue())
    return prefix


async def test_go_downloads_a_module_through_the_proxy(engine: Engine, net: NetHosts) -> None:
    prefix = publish_go_module(net.plain.root)
    goproxy = f"http://allowed.test:{net.plain.port}/{prefix}"
    env = f"GOPATH=/tmp/go GOCACHE=/tmp/go-cache GOSUMDB=off GOPROXY={goproxy} GOFLAGS="
    async with engine.session(engine.spec(network="filtered", egress=policy(net))) as box:
        result = await box.execute(f"{env} go mod download -json {MODULE}@v1.0.0")
        assert result.exit_code == 0, result.stdout_text + result.stderr_text
        assert json.loads(result.stdout_text)["Version"] == "v1.0.0"
        fetched = {(e.host, e.allowed) for e in result.network}
        assert fetched == {("allowed.test", True)}
