"""The network tests' own hosts: real HTTP(S) servers, a real DNS server, a git repository
and a package index, on loopback addresses of this machine.

Boxes never reach these directly (a filtered box has no route out); golem's egress proxy,
which runs on the host, does, when the policy lets it. The HTTPS servers use certificates
of a test CA made with trustme; names resolve through the DNS server, which the engine's
``network.nameservers`` points the proxy at.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import socket
import ssl
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset
import trustme

ALLOWED_ADDRESS = "127.0.0.2"
INTERNAL_ADDRESS = "127.0.0.3"
PRIVATE_USER = "x-access-token"


@dataclass
class Seen:
    """A request a test host received."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case


class _Handler(SimpleHTTPRequestHandler):
    """Static files, plus /echo (the request's headers as JSON) and /private/* (basic auth)."""

    server: _Server
    protocol_version = "HTTP/1.1"

    def __init__(self, request: Any, client_address: Any, server: _Server) -> None:
        root = server.host.root  # type: ignore[attr-defined]
        super().__init__(request, client_address, server, directory=str(root))

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _seen(self) -> None:
        host: HttpHost = self.server.host  # type: ignore[attr-defined]
        headers = {name.lower(): value for name, value in self.headers.items()}
        host.seen.append(Seen(self.command, self.path, headers))

    def do_GET(self) -> None:
        self._seen()
        host: HttpHost = self.server.host  # type: ignore[attr-defined]
        if self.path.startswith("/echo"):
            headers = {name.lower(): value for name, value in self.headers.items()}
            reflected = {"X-Echo-Authorization": headers.get("authorization", "")}
            self._reply(200, json.dumps({"host": host.label, "headers": headers}), reflected)
        elif self.path.startswith("/private/") and not host.authorised(self.headers):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            super().do_GET()

    def do_HEAD(self) -> None:
        self._seen()
        super().do_HEAD()

    def do_POST(self) -> None:
        self._seen()
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        self._reply(200, json.dumps({"received": len(body), "headers": dict(self.headers)}))

    def _reply(self, status: int, text: str, extra: dict[str, str] | None = None) -> None:
        data = text.encode()
        self.send_response(status)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@dataclass
class HttpHost:
    """An HTTP or HTTPS server on one loopback address, serving ``root``."""

    label: str
    address: str
    root: Path
    tls: ssl.SSLContext | None = None
    port: int = 0
    private_password: str = ""
    seen: list[Seen] = field(default_factory=list)
    _server: _Server | None = None

    def start(self) -> HttpHost:
        server = _Server((self.address, self.port), _Handler, bind_and_activate=False)
        server.allow_reuse_address = True
        server.server_bind()
        server.server_activate()
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        server.host = self  # type: ignore[attr-defined]
        self.port = int(server.server_address[1])
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def authorised(self, headers: Any) -> bool:
        expected = base64.b64encode(f"{PRIVATE_USER}:{self.private_password}".encode())
        return bool(self.private_password) and headers.get("Authorization") == (
            "Basic " + expected.decode()
        )

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class DnsServer:
    """A DNS server over UDP answering A queries from a table. A name with several
    addresses answers them in turn, one per query: a rebinding name."""

    def __init__(self, records: dict[str, list[str]]) -> None:
        self.records = {name.lower(): list(addresses) for name, addresses in records.items()}
        self.queries: list[str] = []
        self._turns: dict[str, int] = {}
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self.port = int(self._socket.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                data, peer = self._socket.recvfrom(4096)
            except OSError:
                return
            self._socket.sendto(self._answer(data), peer)

    def _answer(self, data: bytes) -> bytes:
        query = dns.message.from_wire(data)
        reply = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().rstrip(".").lower()
        self.queries.append(name)
        addresses = self.records.get(name)
        if addresses is None:
            reply.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.A:
            turn = self._turns.get(name, 0)
            self._turns[name] = turn + 1
            chosen = addresses[turn % len(addresses)]
            reply.answer.append(dns.rrset.from_text(question.name, 0, "IN", "A", chosen))
        return reply.to_wire()

    def close(self) -> None:
        self._socket.close()


def make_git_repository(parent: Path, name: str) -> Path:
    """A bare repository with one commit, ready for git's dumb HTTP protocol."""
    work = parent / f"{name}-work"
    bare = parent / f"{name}.git"
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(parent), "PATH": "/usr/bin:/bin"}  # fmt: skip
    work.mkdir(parents=True)
    (work / "README.md").write_text(f"the {name} repository\n")
    for argv in (
        ["git", "init", "-q", "-b", "main", str(work)],
        ["git", "-C", str(work), "add", "README.md"],
        ["git", "-C", str(work), "commit", "-q", "-m", "first"],
        ["git", "clone", "-q", "--bare", str(work), str(bare)],
        ["git", "-C", str(bare), "update-server-info"],
    ):
        subprocess.run(argv, check=True, env=env, capture_output=True)
    return bare


def make_package_index(root: Path, name: str = "golemdemo", version: str = "1.0") -> Path:
    """A PEP 503 index at ``root/simple`` holding one small pure-Python wheel."""
    wheel_name = f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{name}/__init__.py": b"VALUE = 42\n",
        f"{name}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
        ),
        f"{name}-{version}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: golem-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = (
        "".join(f"{path},sha256={_digest(data)},{len(data)}\n" for path, data in files.items())
        + f"{name}-{version}.dist-info/RECORD,,\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{name}-{version}.dist-info/RECORD", record)
    packages = root / "packages"
    packages.mkdir(parents=True)
    wheel = buffer.getvalue()
    (packages / wheel_name).write_bytes(wheel)
    sha = hashlib.sha256(wheel).hexdigest()
    project = root / "simple" / name
    project.mkdir(parents=True)
    (project / "index.html").write_text(
        f'<html><body><a href="../../packages/{wheel_name}#sha256={sha}">{wheel_name}</a>'
        "</body></html>\n"
    )
    (root / "simple" / "index.html").write_text(f'<a href="{name}/">{name}</a>\n')
    return root / "simple"


def make_npm_registry(root: Path, name: str = "golemdemo", version: str = "1.0.0") -> Path:
    """A static npm registry at ``root/npm``: one package document (no tarball fetch)."""
    registry = root / "npm"
    registry.mkdir(parents=True)
    document = {
        "name": name,
        "dist-tags": {"latest": version},
        "versions": {
            version: {
                "name": name,
                "version": version,
                "dist": {"tarball": f"http://unused.invalid/{name}-{version}.tgz"},
            }
        },
    }
    (registry / name).write_text(json.dumps(document))
    return registry


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@dataclass
class NetHosts:
    """Everything the in-box network tests reach, and what they need to know of it."""

    ca: trustme.CA
    ca_file: Path
    plain: HttpHost  # http on ALLOWED_ADDRESS
    secure: HttpHost  # https on ALLOWED_ADDRESS
    internal: HttpHost  # http on INTERNAL_ADDRESS, same port as plain: must never be reached
    dns: DnsServer

    @property
    def ports(self) -> list[int]:
        return [self.plain.port, self.secure.port]


def start_test_network(root: Path, private_password: str) -> Iterator[NetHosts]:
    """Start the hosts (a generator for a fixture: yields, then stops them); /private/
    needs basic auth with ``private_password``."""
    ca = trustme.CA()
    ca_file = root / "test-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    site = root / "site"
    site.mkdir()
    (site / "hello.txt").write_text("hello from the allowed host\n")
    (site / "big.bin").write_bytes(bytes(range(256)) * 4096 * 5)  # 5 MiB
    make_git_repository(site, "repo")
    private = site / "private"
    private.mkdir()
    make_git_repository(private, "repo")
    make_package_index(site)
    make_npm_registry(site)
    internal_site = root / "internal"
    internal_site.mkdir()
    (internal_site / "hello.txt").write_text("INTERNAL SECRET PAGE\n")
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    names = ("allowed.test", "brokered.test", "private.test", "rebind.test")
    ca.issue_cert(*names).configure_cert(server_tls)
    plain = HttpHost("plain", ALLOWED_ADDRESS, site, private_password=private_password).start()
    secure = HttpHost(
        "secure", ALLOWED_ADDRESS, site, tls=server_tls, private_password=private_password
    ).start()
    internal = HttpHost("internal", INTERNAL_ADDRESS, internal_site, port=plain.port).start()
    dns_server = DnsServer(
        {
            "allowed.test": [ALLOWED_ADDRESS],
            "brokered.test": [ALLOWED_ADDRESS],
            "private.test": [ALLOWED_ADDRESS],
            "denied.test": [ALLOWED_ADDRESS],
            "unlisted.test": [ALLOWED_ADDRESS],
            "internal.test": [INTERNAL_ADDRESS],
            "metadata.test": ["169.254.169.254"],
            "rebind.test": [ALLOWED_ADDRESS, INTERNAL_ADDRESS],
        }
    )
    try:
        yield NetHosts(ca, ca_file, plain, secure, internal, dns_server)
    finally:
        for host in (plain, secure, internal):
            host.stop()
        dns_server.close()
