"""The network of ``filtered`` boxes: a proxy per box, reached through a mounted socket.

Each filtered box gets a host directory holding its proxy's unix socket (and, when
credentials are brokered, golem's CA and a CA bundle), bound read-only at /run/golem in the
box. The supervisor bridges a loopback port in the box to that socket, and the box's
environment points HTTP(S)_PROXY there. The box itself has no route out.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from golem.core.config import GolemConfig
from golem.core.errors import ConfigError
from golem.core.network import EgressPolicy, NetworkConfig
from golem.sandbox.contracts import Mount

if TYPE_CHECKING:  # the proxy (DNS, TLS, HTTP parsing) loads with the first filtered box
    from golem.sandbox.egress import CredentialBroker, EgressCA, EgressProxy

__all__ = [
    "BOX_NETWORK_DIR",
    "BOX_SOCKET",
    "BoxNetwork",
    "EgressService",
    "host_ca_bundle",
    "lift_open_files_limit",
]

BOX_NETWORK_DIR = "/run/golem"
BOX_SOCKET = f"{BOX_NETWORK_DIR}/egress.sock"
BOX_BUNDLE = f"{BOX_NETWORK_DIR}/ca-certificates.crt"
SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
TRUST_VARIABLES = (
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
)
"""Variables that point a box's TLS clients at /run/golem/ca-certificates.crt."""
PACKAGE_MANAGER_PROXY_VARIABLES = (
    "NPM_CONFIG_PROXY",
    "NPM_CONFIG_HTTPS_PROXY",
    "YARN_HTTP_PROXY",
    "YARN_HTTPS_PROXY",
)
"""Beside HTTP(S)_PROXY, which libcurl (curl, git, cargo), pip, npm and go read: npm's own
configuration (which yarn 1 and pnpm read too) and yarn 2+'s, which ignores HTTP(S)_PROXY.
Set in both spellings, as the rest."""


def host_ca_bundle() -> bytes:
    """The host's CA bundle: what the host trusts, a TLS-inspecting gateway included."""
    for candidate in (SYSTEM_BUNDLE, ssl.get_default_verify_paths().cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_bytes()
    return b""


NR_OPEN = 1 << 20
"""The kernel's default ceiling on a process's open files (fs.nr_open)."""


def lift_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit, and return it.

    Every connection a filtered box holds costs its proxy two descriptors in this process;
    a shell's usual soft limit (1024) would cap every box together at ~500 connections,
    and a package manager's install opens hundreds."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = NR_OPEN if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):  # a ceiling below NR_OPEN: keep soft
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class BoxNetwork:
    """One filtered box's proxy, socket directory and what the box needs to use them."""

    def __init__(self, directory: Path, proxy: EgressProxy, service: EgressService) -> None:
        self.directory = directory
        self.proxy = proxy
        self._service = service
        self.secrets: list[str] = []

    def mounts(self) -> list[Mount]:
        """The socket directory at /run/golem, and the CA bundle over the box's own."""
        return [
            Mount(self.directory, BOX_NETWORK_DIR),
            Mount(self.directory / "ca-certificates.crt", SYSTEM_BUNDLE, optional=True),
        ]

    def configure(self, policy: EgressPolicy, *, credentials: bool = True) -> dict[str, str]:
        """Start a session with ``policy`` and fresh sentinels (no credential brokered
        unless ``credentials``); returns the box's env."""
        from golem.sandbox.egress import CredentialBroker  # noqa: PLC0415 - loaded already

        broker = self._service.broker() if credentials else CredentialBroker([], {})
        self.proxy.configure(policy, broker)
        self.secrets = broker.values
        port = self._service.config.proxy_port
        url = f"http://127.0.0.1:{port}"
        env: dict[str, str] = {}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", *PACKAGE_MANAGER_PROXY_VARIABLES):
            env[name] = env[name.lower()] = url
        env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
        env.update(dict.fromkeys(TRUST_VARIABLES, BOX_BUNDLE))
        env.update(broker.box_env(port))
        return env

    @contextlib.contextmanager
    def host_route(self, upstream: str, token: str) -> Iterator[str]:
        """A route, for as long as the block lasts, from the box to a service golem runs
        on this host's loopback; yields its URL as the box calls it. The proxy puts
        ``Authorization: Bearer <token>`` on every request through it."""
        from golem.sandbox.egress import ROUTE_PREFIX  # noqa: PLC0415 - loaded already

        item = self.proxy.broker.add_host_route(upstream, token)
        port = self._service.config.proxy_port
        try:
            yield f"http://127.0.0.1:{port}{ROUTE_PREFIX}{item.credential.name}"
        finally:
            self.proxy.broker.remove(item)

    async def close(self) -> None:
        """Stop the proxy and remove the directory."""
        await self.proxy.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class EgressService:
    """What the engine's filtered boxes share: resolver, credentials, CA (made on first
    need), the host's own addresses, and where sockets live."""

    def __init__(self, config: GolemConfig) -> None:
        from golem.sandbox.egress import host_addresses, make_resolver  # noqa: PLC0415

        self.config: NetworkConfig = config.engine.network
        self._credentials = list(config.credentials)
        self._values: dict[str, str] | None = None
        self._resolver = make_resolver(self.config)
        self._ca: EgressCA | None = None
        self._own = host_addresses()
        self._upstream_tls: ssl.SSLContext | None = None
        lift_open_files_limit()

    def broker(self) -> CredentialBroker:
        """The configured credentials with fresh sentinels (values read once)."""
        from golem.sandbox.egress import CredentialBroker, read_credential_values  # noqa: PLC0415

        if self._values is None:
            self._values = read_credential_values(self._credentials)
        return CredentialBroker(self._credentials, self._values)

    def _runtime_dir(self) -> Path:
        base = self.config.runtime_dir
        base.mkdir(parents=True, exist_ok=True)
        info = base.stat()
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise ConfigError(
                f"{base} (engine.network.runtime_dir) must be owned by this user and not "
                "writable by others; remove it or choose another"
            )
        base.chmod(0o711)  # boxes' users may pass through, not list
        return base

    async def open(self, box_id: str) -> BoxNetwork:
        """A proxy for a new box, listening in a directory of its own, with the CA bundle
        its TLS clients trust: the host's, plus golem's CA when credentials are brokered."""
        from golem.sandbox.egress import EgressCA, EgressProxy, upstream_context  # noqa: PLC0415

        if self._credentials:
            self.broker()  # a missing credential value fails before any box starts
            if self._ca is None:
                self._ca = EgressCA()
        if self._upstream_tls is None:
            self._upstream_tls = upstream_context(self.config.upstream_ca)
        directory = self._runtime_dir() / box_id
        directory.mkdir(mode=0o755)
        directory.chmod(0o755)
        proxy = EgressProxy(
            EgressPolicy(),
            resolver=self._resolver,
            ca=self._ca,
            upstream_tls=self._upstream_tls,
            own_addresses=self._own,
        )
        try:
            golem_ca = b""
            if self._ca is not None:
                golem_ca = self._ca.pem
                (directory / "golem-ca.pem").write_bytes(golem_ca)
                (directory / "golem-ca.pem").chmod(0o644)
            bundle = directory / "ca-certificates.crt"
            bundle.write_bytes(host_ca_bundle() + golem_ca)
            bundle.chmod(0o644)
            # where the proxy answers in the box, for daemons that start before its env is
            # set (a box's container engine)
            (directory / "proxy").write_text(f"http://127.0.0.1:{self.config.proxy_port}\n")
            (directory / "proxy").chmod(0o644)
            socket = directory / "egress.sock"
            await proxy.start(socket)
            socket.chmod(0o666)  # the box's user, whatever its uid on the host
        except BaseException:
            await proxy.close()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return BoxNetwork(directory, proxy, self)

    def close(self) -> None:
        """Forget the CA's leaf keys."""
        if self._ca is not None:
            self._ca.close()
            self._ca = None

    @staticmethod
    def remove_leftovers(config: NetworkConfig, box_id: str) -> None:
        """Remove the socket directory of a box whose owner died."""
        with contextlib.suppress(OSError):
            shutil.rmtree(config.runtime_dir / box_id)
