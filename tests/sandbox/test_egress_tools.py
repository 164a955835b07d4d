"""A filtered box's proxy serves the ecosystems' own clients beyond what
tests/sandbox/test_network.py shows (curl, git, pip, npm view): go fetches modules through
its environment, and npm installs 150 packages in parallel. The box has no DNS and no
route: what arrives came through the proxy."""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import secrets
import shutil
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from golem.sandbox import Engine, ExecRequest
from tests.conftest import QUICK_START_BACKENDS
from tests.sandbox.nethosts import ALLOWED_ADDRESS, NetHosts
from tests.sandbox.network_policy import config, policy  # noqa: F401 - the fixture, shared

NO_GO = pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed (golang-go)")

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


@pytest.mark.bwrap
@NO_GO
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


PACKAGES = 150


def publish_npm_packages(root: Path, base_url: str, count: int) -> list[str]:
    """``count`` packages with tarballs in a static npm registry under ``root``."""
    names = [f"golem-pkg-{n}" for n in range(count)]
    for name in names:
        manifest = json.dumps({"name": name, "version": "1.0.0", "main": "index.js"})
        tarball = io.BytesIO()
        with tarfile.open(fileobj=tarball, mode="w:gz") as archive:
            for path, data in (("package.json", manifest), ("index.js", "module.exports = 1\n")):
                info = tarfile.TarInfo(f"package/{path}")
                info.size = len(data.encode())
                archive.addfile(info, io.BytesIO(data.encode()))
        data = tarball.getvalue()
        (root / name / "-").mkdir(parents=True)
        (root / name / "-" / f"{name}-1.0.0.tgz").write_bytes(data)
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        dist = {"tarball": f"{base_url}/{name}/-/{name}-1.0.0.tgz", "integrity": integrity}
        version = {"name": name, "version": "1.0.0", "dist": dist}
        document = {"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": version}}
        (root / name / "index.json").write_text(json.dumps(document))
    return names


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A static npm registry on the allowed address: a package's document at /name."""

    class Handler(SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            found = Path(super().translate_path(path))
            return str(found / "index.json" if found.is_dir() else found)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(
        (ALLOWED_ADDRESS, 0), functools.partial(Handler, directory=str(tmp_path))
    )
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield tmp_path, int(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "backend",
    # Not gvisor (12 s there): hundreds of connections through its bridge are
    # tests/sandbox/test_egress_concurrency.py's, on gVisor too.
    [p for p in QUICK_START_BACKENDS if p.values[0] != "gvisor"],
)
async def test_npm_installs_a_hundred_and_fifty_packages_through_the_proxy(
    engine: Engine, net: NetHosts, registry: tuple[Path, int]
) -> None:
    """An install fetches documents and tarballs in parallel, as npm 9 of the devbox image
    does (it stalled behind the proxy until its timeout)."""
    root, port = registry
    url = f"http://allowed.test:{port}"
    names = publish_npm_packages(root, url, PACKAGES)
    manifest = {"name": "app", "version": "1.0.0", "dependencies": dict.fromkeys(names, "1.0.0")}
    rules = policy(net, ports=[*net.ports, port])
    async with engine.session(engine.spec(network="filtered", egress=rules)) as box:
        await box.put_file("package.json", json.dumps(manifest))
        result = await box.execute(
            ExecRequest(
                cmd=f"npm install --no-audit --no-fund --no-update-notifier --registry {url}/ "
                "--cache /tmp/npm-cache && cd node_modules && ls | wc -l",
                timeout=240,
            )
        )
        assert result.exit_code == 0, result.stdout_text[-2000:] + result.stderr_text[-2000:]
        assert result.stdout_text.split()[-1] == str(PACKAGES)


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_npms_configuration_names_the_proxy(engine: Engine, net: NetHosts) -> None:
    """What npm's configuration says (yarn 1 and pnpm read it too), beside the variables."""
    async with engine.session(engine.spec(network="filtered", egress=policy(net))) as box:
        result = await box.execute(
            "npm config get proxy; npm config get https-proxy; echo $YARN_HTTPS_PROXY"
        )
        assert result.stdout_text.split() == ["http://127.0.0.1:3128"] * 3, result.stderr_text
