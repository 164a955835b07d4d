"""Local package registries for install tests: a PEP 503 simple index, an npm registry and
a Go module proxy, on one HTTP server at a loopback address, under names a test DNS server resolves.

Boxes reach them the way they reach a real registry: through golem's egress proxy, in
``filtered`` mode, by name (``pypi.test``, ``npm.test``, ``goproxy.test``); the engine's
configuration must point the proxy at ``LocalRegistries.dns`` and allow ``ADDRESS`` and
``port`` (see ``LocalRegistries.engine_config``). Each registry serves packages built here:

- ``add_wheel(name, version, files)``: a pure-Python wheel in the simple index
  (``/simple/<name>/``), e.g. ``golemdemo`` whose ``VALUE`` is 42;
- ``add_go_module(module, version, files)``: a module version behind the Go module proxy
  protocol (``/go/<module>/@v/...``), with its ``go.sum`` lines;
- ``add_npm(name, version, files)``: an npm packument (``/npm/<name>``) with a tarball
  (``/npm/-/<name>-<version>.tgz``) and its sha512 integrity, as ``npm ci`` checks it;
  ``npm_lock(...)`` writes the matching ``package-lock.json``.

``/stall/...`` accepts a request and answers nothing until the server stops: a registry
that hangs. ``requests`` lists the paths asked for, in order.

Usage (a fixture)::

    with LocalRegistries.started(tmp_path) as registries:
        registries.add_wheel("golemdemo", "1.0", {"golemdemo/__init__.py": "VALUE = 42\\n"})
        config = load_config(registries.engine_config(state_dir, redirect=True), files=[])

With ``redirect``, runs on detected conventions (which name pypi.org, registry.npmjs.org,
proxy.golang.org) install from here: see ``engine_config``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.sandbox.nethosts import DnsServer

ADDRESS = "127.0.0.2"
PYPI = "pypi.test"
NPM = "npm.test"
GO = "goproxy.test"
PYPI_PATTERN = r"^pypi\.test$"
NPM_PATTERN = r"^npm\.test$"
GO_PATTERN = r"^goproxy\.test$"


class _Dns(DnsServer):
    """The tests' DNS server, which may be closed while a query is being answered."""

    def _serve(self) -> None:
        while True:
            try:
                data, peer = self._socket.recvfrom(4096)
                self._socket.sendto(self._answer(data), peer)
            except OSError:
                return


class _Handler(SimpleHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def __init__(self, request: Any, client_address: Any, server: _Server) -> None:
        super().__init__(request, client_address, server, directory=str(server.registries.root))

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        registries = self.server.registries
        registries.requests.append(self.path)
        if self.path.startswith("/stall/"):
            registries.released.wait(120)  # answers nothing while the test runs
            return
        if self.path.startswith("/npm/") and not self.path.startswith("/npm/-/"):
            self.path += ".json"  # a packument, served with its JSON type
        super().do_GET()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    registries: LocalRegistries


@dataclass
class LocalRegistries:
    """The registries' server, its files and its DNS."""

    root: Path
    dns: DnsServer
    port: int = 0
    requests: list[str] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)

    @classmethod
    @contextmanager
    def started(cls, root: Path) -> Iterator[LocalRegistries]:
        """Serve from ``root`` (made) until the block ends."""
        root.mkdir(parents=True, exist_ok=True)
        dns = _Dns({PYPI: [ADDRESS], NPM: [ADDRESS], GO: [ADDRESS], "other.test": [ADDRESS]})
        registries = cls(root, dns)
        server = _Server((ADDRESS, 0), _Handler)
        server.registries = registries
        registries.port = int(server.server_address[1])
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield registries
        finally:
            registries.released.set()
            server.shutdown()
            server.server_close()
            dns.close()

    @property
    def pypi_url(self) -> str:
        """PIP_INDEX_URL of the simple index."""
        return f"http://{PYPI}:{self.port}/simple/"

    @property
    def npm_url(self) -> str:
        """npm_config_registry of the npm registry."""
        return f"http://{NPM}:{self.port}/npm/"

    def engine_config(self, state_dir: Path, *, redirect: bool = False) -> dict[str, object]:
        """golem configuration whose filtered boxes may reach these registries (by the
        install's allow list: the engine's own allows no host name). ``redirect``: every
        box's package managers are pointed at these registries too (pip, npm, go) and the
        install box may reach them whatever the repository's conventions name: for runs
        on detected conventions, which name the real registries."""
        defaults: dict[str, object] = {
            "egress": {"allow_cidrs": [f"{ADDRESS}/32"], "ports": [self.port]}
        }
        config: dict[str, object] = {
            "state_dir": str(state_dir),
            "engine": {"network": {"nameservers": [self.dns.address]}, "defaults": defaults},
        }
        if redirect:
            defaults["env"] = {
                "PIP_INDEX_URL": self.pypi_url,
                "PIP_TRUSTED_HOST": PYPI,
                "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "npm_config_registry": self.npm_url,
                "GOPROXY": self.go_url,
                "GOSUMDB": "off",
            }
            config["dependencies"] = {"registries": [PYPI_PATTERN, NPM_PATTERN, GO_PATTERN]}
        return config

    @property
    def go_url(self) -> str:
        """GOPROXY of the Go module proxy."""
        return f"http://{GO}:{self.port}/go"

    def add_go_module(self, module: str, version: str, files: dict[str, str]) -> str:
        """A module version (``files``: path -> text, go.mod among them) served by the Go
        module proxy protocol; its ``go.sum`` lines."""
        prefix = f"{module}@{version}/"
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for path, text in sorted(files.items()):
                archive.writestr(prefix + path, text)
        where = self.root / "go" / module / "@v"
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{version}.zip").write_bytes(buffer.getvalue())
        (where / f"{version}.mod").write_text(files["go.mod"])
        (where / f"{version}.info").write_text(
            json.dumps({"Version": version, "Time": "2024-01-01T00:00:00Z"})
        )
        (where / "list").write_text(version + "\n")
        tree = _dirhash({prefix + path: text for path, text in files.items()})
        return (
            f"{module} {version} {tree}\n"
            f"{module} {version}/go.mod {_dirhash({'go.mod': files['go.mod']})}\n"
        )

    def add_wheel(self, name: str, version: str, files: dict[str, str]) -> None:
        """A pure-Python wheel of ``files`` (path -> text), listed in the simple index."""
        wheel_name = f"{name}-{version}-py3-none-any.whl"
        info = f"{name}-{version}.dist-info"
        content = {path: text.encode() for path, text in files.items()}
        content[f"{info}/METADATA"] = (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
        )
        content[f"{info}/WHEEL"] = (
            b"Wheel-Version: 1.0\nGenerator: golem-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        )
        record = "".join(f"{p},sha256={_urlsafe(d)},{len(d)}\n" for p, d in content.items())
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for path, data in content.items():
                archive.writestr(path, data)
            archive.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
        self._publish(name, wheel_name, buffer.getvalue())

    def add_wheel_file(self, wheel: Path) -> None:
        """A wheel built elsewhere (e.g. one `pip download` fetched), listed in the index."""
        self._publish(wheel.name.split("-")[0], wheel.name, wheel.read_bytes())

    def _publish(self, name: str, wheel_name: str, wheel: bytes) -> None:
        packages = self.root / "packages"
        packages.mkdir(exist_ok=True)
        (packages / wheel_name).write_bytes(wheel)
        project = self.root / "simple" / re.sub(r"[-_.]+", "-", name).lower()
        project.mkdir(parents=True, exist_ok=True)
        links = [
            f'<a href="../../packages/{w.name}#sha256={_sha256(w)}">{w.name}</a>'
            for w in sorted(packages.glob("*.whl"))
            if re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower() == project.name
        ]
        (project / "index.html").write_text("<html><body>" + "".join(links) + "</body></html>\n")

    def add_npm(self, name: str, version: str, files: dict[str, str]) -> str:
        """A package of ``files`` (path -> text, package.json made), published in the npm
        registry; its integrity (``sha512-...``)."""
        manifest = {"name": name, "version": version, "main": "index.js"}
        content = {"package/package.json": json.dumps(manifest)} | {
            f"package/{path}": text for path, text in files.items()
        }
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            for path, text in content.items():
                data = text.encode()
                entry = tarfile.TarInfo(path)
                entry.size, entry.mode = len(data), 0o644
                archive.addfile(entry, io.BytesIO(data))
        tarball = buffer.getvalue()
        tarballs = self.root / "npm" / "-"
        tarballs.mkdir(parents=True, exist_ok=True)
        (tarballs / f"{name}-{version}.tgz").write_bytes(tarball)
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
        dist = {
            "tarball": f"{self.npm_url}-/{name}-{version}.tgz",
            "integrity": integrity,
            "shasum": hashlib.sha1(tarball).hexdigest(),  # noqa: S324  # npm's own field
        }
        packument = self.root / "npm" / f"{name}.json"
        document = json.loads(packument.read_text()) if packument.exists() else {"versions": {}}
        document.update({"name": name, "dist-tags": {"latest": version}})
        document["versions"][version] = {**manifest, "dist": dist}
        packument.write_text(json.dumps(document))
        return integrity

    def npm_lock(self, project: str, dependencies: dict[str, tuple[str, str]]) -> str:
        """``package-lock.json`` (lockfile version 3) of ``project`` depending on
        ``dependencies`` (name -> (version, integrity)) from this registry."""
        packages: dict[str, Any] = {
            "": {
                "name": project,
                "version": "1.0.0",
                "dependencies": {name: version for name, (version, _) in dependencies.items()},
            }
        }
        for name, (version, integrity) in dependencies.items():
            packages[f"node_modules/{name}"] = {
                "version": version,
                "resolved": f"{self.npm_url}-/{name}-{version}.tgz",
                "integrity": integrity,
            }
        lock = {"name": project, "version": "1.0.0", "lockfileVersion": 3, "requires": True,
                "packages": packages}  # fmt: skip
        return json.dumps(lock, indent=2) + "\n"


def _dirhash(files: dict[str, str]) -> str:
    """Go's ``h1:`` hash of files (golang.org/x/mod/sumdb/dirhash.Hash1)."""
    summary = "".join(
        f"{hashlib.sha256(files[name].encode()).hexdigest()}  {name}\n" for name in sorted(files)
    )
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _urlsafe(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


WHEELS = Path.home() / ".cache" / "golem-tests" / "wheels"


def downloaded_wheels(*requirements: str, platforms: tuple[str, ...] = ("any",)) -> list[Path]:
    """Wheels of ``requirements`` and their dependencies for the boxes' Python (3.11) on
    ``platforms`` (pure ones by default; ``manylinux2014_x86_64`` for a compiled one such
    as PyYAML), fetched once from the package index this machine's pip uses and kept in
    ``WHEELS``: real packages (setuptools, pytest) for a local index to serve."""
    key = "\n".join([*sorted(requirements), *(platforms if platforms != ("any",) else ())])
    place = WHEELS / hashlib.sha256(key.encode()).hexdigest()[:16]
    if not place.is_dir():
        partial = place.with_name(place.name + ".partial")
        argv = [
            sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
            "--python-version", "3.11", *(f"--platform={p}" for p in platforms),
            "--dest", str(partial), *requirements,
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"could not download {requirements} for the local package index (this "
                f"machine reaches the package registries when it sets up): {done.stderr[-800:]}"
            )
        partial.rename(place)
    return sorted(place.glob("*.whl"))


@contextmanager
def demo_registries(
    root: Path, *, versions: tuple[str, ...] = ("1.0",)
) -> Iterator[LocalRegistries]:
    """Registries serving ``golemdemo`` (``VALUE = 42``) at ``versions``: what the install
    tests' fixture repositories depend on."""
    with LocalRegistries.started(root) as registries:
        for version in versions:
            registries.add_wheel("golemdemo", version, {"golemdemo/__init__.py": "VALUE = 42\n"})
        yield registries
