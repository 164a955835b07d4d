"""Which git remotes the host may reach for a run, checked where git connects.

A server runs git on its own host for users it does not trust; the remote URL of a run is
theirs. ``pin_remote`` checks a URL against the run's ``RemotePolicy`` as the egress proxy
checks a box's destinations (scheme, host name, port, every resolved address: private,
loopback, link-local and this host's own refused), then gives git the config that holds it
to what was checked: the name pinned to the checked address (``http.curloptResolve``; ssh's
``HostName``), no redirect, no other transport, no proxy, and none of the host's own
credentials, so a name that resolves elsewhere later, or a remote that answers with a
redirect, reaches nothing new.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from golem.core.errors import GitError, GitRemoteError, RemoteRefused
from golem.core.network import IPAddress, NetworkConfig, RemotePolicy, RemoteScheme

if TYPE_CHECKING:
    from golem.sandbox.egress import Resolver

__all__ = [
    "PinnedRemote",
    "Reach",
    "names_a_path",
    "parse_remote",
    "pin_remote",
    "reach",
    "sealed_ssh_command",
    "withheld",
]

DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22}
SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(\[[^\]/]+\]|[^:/\[\]]+):(?!//)")
HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
SCHEME_ALIASES = {"git+ssh": "ssh", "ssh+git": "ssh"}
NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")  # no top-level domain looks like this


@dataclass(frozen=True)
class Remote:
    """A remote URL taken apart: how it is reached, and where."""

    url: str
    scheme: RemoteScheme
    host: str = ""
    port: int = 0


@dataclass
class PinnedRemote:
    """What git needs to reach checked remotes only."""

    config: list[tuple[str, str]] = field(default_factory=list)
    ssh_command: str | None = None


@dataclass
class Reach:
    """How one git command that talks to a remote runs: extra config and environment, and
    whether it is sealed from the host's own credentials."""

    config: list[tuple[str, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    sealed: bool = False


async def reach(
    urls: Sequence[str],
    policy: RemotePolicy | None,
    network: NetworkConfig | None,
    *,
    host_credentials: bool,
) -> Reach:
    """Under ``policy``, git pinned to the checked ``urls`` and sealed; without one but
    with no right to the host's credentials (a tenant's run), sealed only; else nothing."""
    if policy is None and host_credentials:
        return Reach()
    found = Reach(sealed=True)
    if policy is not None:
        pinned = await pin_remote(list(urls), policy, network)
        found.config = pinned.config
        if pinned.ssh_command is not None:
            found.env["GIT_SSH_COMMAND"] = pinned.ssh_command
    found.env.setdefault("GIT_SSH_COMMAND", sealed_ssh_command())
    return found


def withheld(args: Sequence[str], urls: Sequence[str], error: GitError) -> GitError:
    """A remote command's failure without git's own words (they can tell what answered at
    an address the user picked)."""
    verb = args[0] if args else "git"
    where = ", ".join(urls) or "the remote"
    return GitRemoteError(
        f"git {verb} of {where} failed (exit code {error.returncode}): the repository does "
        "not exist, needs credentials this run does not have, or cannot be reached from "
        "golem; git's own message is withheld (policy field repos.git_errors)",
        command=f"git {verb}",
        returncode=error.returncode,
    )


def names_a_path(url: str) -> bool:
    """Whether git takes ``url`` as a path on this host: no scheme, no remote helper, not
    ``[user@]host:path``."""
    return "://" not in url and "::" not in url.split("/", 1)[0] and not SCP_LIKE.match(url)


def parse_remote(url: str) -> Remote:
    """How git would reach ``url``: a URL, ``[user@]host:path`` (ssh) or a local path."""
    if "::" in url.split("/", 1)[0]:
        raise RemoteRefused(
            f"{url!r} names a git remote helper (transport::address); use an https URL",
            rule="schemes",
        )
    if names_a_path(url):
        return Remote(url, "file")
    if "://" not in url:
        match = SCP_LIKE.match(url)
        assert match is not None  # not a path, no scheme: [user@]host:path
        return _with_host(url, "ssh", match.group(1).strip("[]"), None)
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # characters a URL cannot hold in its host (NFKC forms, ...)
        raise RemoteRefused(f"{url!r} is not a URL golem can check: {exc}", rule="allow") from None
    scheme = SCHEME_ALIASES.get(parts.scheme.lower(), parts.scheme.lower())
    if scheme == "file":
        return Remote(url, "file")
    if scheme not in DEFAULT_PORTS:
        raise RemoteRefused(
            f"{url!r}: golem reaches git remotes over https, http or ssh, not {scheme}://",
            rule="schemes",
        )
    try:
        port = parts.port
    except ValueError:
        raise RemoteRefused(f"{url!r} has no valid port", rule="ports") from None
    return _with_host(url, scheme, parts.hostname or "", port)


def _with_host(url: str, scheme: str, host: str, port: int | None) -> Remote:
    literal = _literal(host)
    if literal is None and NUMERIC_LABEL.match(host.rsplit(".", 1)[-1]):
        raise RemoteRefused(
            f"{url!r}: {host!r} spells an address in a form golem does not take; write it "
            "as a dotted-decimal or bracketed IPv6 address",
            rule="allow",
        )
    if literal is None and not HOST_NAME.match(host):
        raise RemoteRefused(
            f"{url!r}: {host!r} is not a host name golem checks (write it in lower case, "
            "letters, digits, dots and dashes, no trailing dot)",
            rule="allow",
        )
    canonical = str(literal) if literal is not None else host
    chosen = port if port is not None else DEFAULT_PORTS[scheme]
    return Remote(url, scheme, canonical, chosen)  # type: ignore[arg-type]


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def pin_remote(
    urls: list[str], policy: RemotePolicy, network: NetworkConfig | None = None
) -> PinnedRemote:
    """Check every URL git may reach against ``policy`` and return the config that pins
    git to what was checked; ``RemoteRefused`` names the rule a URL breaks."""
    pinned = PinnedRemote(
        config=[
            ("protocol.allow", "never"),
            *[(f"protocol.{scheme}.allow", "always") for scheme in policy.schemes],
            ("http.followRedirects", "false"),
            ("http.proxy", ""),
            ("credential.helper", ""),
        ]
    )
    checked: tuple[Resolver, frozenset[IPAddress]] | None = None
    for url in urls:
        remote = parse_remote(url)
        if remote.scheme not in policy.schemes:
            raise RemoteRefused(
                f"{url!r} is reached over {remote.scheme}, which this run may not use "
                f"(allowed: {', '.join(policy.schemes)})",
                rule="schemes",
            )
        if remote.scheme == "file":
            continue
        if checked is None:  # dnspython loads for a remote on the network only
            from golem.sandbox.egress import host_addresses, make_resolver  # noqa: PLC0415

            checked = make_resolver(network or NetworkConfig()), host_addresses()
        address = await _checked_address(remote, policy, *checked)
        if remote.scheme == "ssh":
            command = _ssh_command(remote, address)
            if pinned.ssh_command not in (None, command):
                raise RemoteRefused(f"{url!r}: one ssh remote per git command", rule="schemes")
            pinned.ssh_command = command
        else:
            shown = f"[{address}]" if ":" in address else address
            pinned.config.append(("http.curloptResolve", f"{remote.host}:{remote.port}:{shown}"))
    return pinned


async def _checked_address(
    remote: Remote, policy: RemotePolicy, resolve: Resolver, own: frozenset[IPAddress]
) -> str:
    egress = policy.egress
    decision = egress.check_name(remote.host, remote.port)
    if not decision.allowed:
        raise RemoteRefused(f"{remote.url!r}: {decision.rule}", rule=_rule_of(decision.rule))
    try:
        answers = await resolve(remote.host, remote.port)
        addresses = [ipaddress.ip_address(answer) for answer in answers]
    except (OSError, ValueError):
        addresses = []
    if not addresses:
        raise RemoteRefused(
            f"{remote.url!r}: {remote.host} does not resolve", rule="allow", resolved=True
        )
    for address in addresses:  # every address must pass: no split answers
        verdict = egress.check_address(address, own)
        if not verdict.allowed:
            raise RemoteRefused(
                f"{remote.url!r}: {remote.host} resolves to a refused address ({verdict.rule})",
                rule="allow_cidrs",
                resolved=True,
            )
    return str(addresses[0])


def _rule_of(reason: str) -> str:
    if reason.startswith("port"):
        return "ports"
    if reason.startswith("deny"):
        return "deny"
    return "allow"


def _ssh_command(remote: Remote, address: str) -> str:
    """ssh held to the checked address (see ``sealed_ssh_command``)."""
    return sealed_ssh_command(["-o", f"HostName={address}", "-o", f"HostKeyAlias={remote.host}"])


def sealed_ssh_command(extra: list[str] | None = None) -> str:
    """ssh with no config, agent or key of the host's (an identity file of /dev/null
    replaces ssh's default keys)."""
    options = [
        "-F",
        "/dev/null",
        "-o",
        "IdentityAgent=none",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "IdentityFile=/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        "ProxyCommand=none",
        "-o",
        "ProxyJump=none",
        *(extra or []),
    ]
    return shlex.join(["ssh", *options])
