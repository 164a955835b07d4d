"""runsc on this host: its version, the platform that starts a sandbox here (found by
trying one, never by the presence of a device), and the command line of a box.

A platform is how gVisor's kernel (the Sentry) catches the box's system calls: ``kvm``
(hardware virtualisation), ``systrap`` (seccomp traps, newer runsc) or ``ptrace``. A
host can expose /dev/kvm whose guests never run (software nested virtualisation), so
``auto`` starts ``true`` in a sandbox on each in turn, fastest first, and keeps the
first that answers; the choice is kept per runsc build, kernel and boot.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from golem.core.errors import BackendUnavailable

__all__ = ["PLATFORMS", "RunscHost", "box_flags", "find_runsc", "runsc_host"]

PLATFORMS = ("kvm", "systrap", "ptrace")
"""Fastest first: the order ``auto`` tries them in."""
PROBE_TIMEOUT = 10.0
"""Seconds a platform gets to run ``true`` (a working one takes well under one; kvm on
a host whose KVM cannot run guests hangs)."""
CACHE_NAME = "platform.json"


@dataclass(frozen=True)
class RunscHost:
    """What golem found out about runsc on this host."""

    runsc: str
    version: str
    platform: str
    tried: dict[str, str]
    """Each platform tried, with ``ok`` or why it did not start a sandbox."""


def find_runsc(name: str) -> str:
    """The runsc executable's path, or BackendUnavailable with what to install."""
    path = shutil.which(name)
    if path is None:
        raise BackendUnavailable(
            f"runsc ({name}) is not installed; run scripts/setup or `apt-get install runsc`, "
            "or choose --backend process"
        )
    return path


def _version(runsc: str) -> str:
    try:
        done = subprocess.run(
            [runsc, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailable(f"{runsc} --version failed: {exc}") from exc
    first = done.stdout.strip().splitlines()[:1]
    if done.returncode != 0 or not first:
        raise BackendUnavailable(f"{runsc} --version failed: {done.stderr.strip()[-300:]}")
    return first[0].removeprefix("runsc version ").strip()


def _listed_platforms(runsc: str) -> list[str]:
    done = subprocess.run(
        [runsc, "help", "platforms"], capture_output=True, text=True, timeout=30, check=False
    )
    listed = set(done.stdout.split())
    return [name for name in PLATFORMS if name in listed] or ["ptrace"]


def _probe(runsc: str, platform: str, prefix: list[str]) -> str:
    """``ok`` when a sandbox on ``platform`` runs ``true``, else why not."""
    with tempfile.TemporaryDirectory(prefix="golem-runsc-probe-") as scratch:
        os.chmod(scratch, 0o777)  # noqa: S103 - runsc's state, for the run_as user
        argv = [*prefix, runsc, "--rootless", "--network=none", f"--platform={platform}"]
        argv += ["--root", scratch, "do", "true"]
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd="/",
            start_new_session=True,
        )
        try:
            _, stderr = process.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return f"no answer within {PROBE_TIMEOUT:g}s"
    if process.returncode == 0:
        return "ok"
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[-1][-300:] if lines else f"exit status {process.returncode}"


def _cache_key(runsc: str, version: str, prefix: list[str]) -> dict[str, str]:
    boot = Path("/proc/sys/kernel/random/boot_id")
    return {
        "runsc": os.path.realpath(runsc),
        "version": version,
        "kernel": os.uname().release,
        "boot": boot.read_text().strip() if boot.exists() else "",
        "as": " ".join(prefix),
    }


def runsc_host(name: str, platform: str, cache_dir: Path, prefix: list[str]) -> RunscHost:
    """runsc's path, version and platform: ``platform`` itself, or for ``auto`` the first
    that runs a sandbox here (run through ``prefix``: as the boxes' host user), tried once
    per runsc build, kernel and boot and kept in ``cache_dir``."""
    runsc = find_runsc(name)
    version = _version(runsc)
    if platform != "auto":
        return RunscHost(runsc, version, platform, {})
    key = _cache_key(runsc, version, prefix)
    cache = cache_dir / CACHE_NAME
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        kept = json.loads(cache.read_text())
        if kept["key"] == key:
            return RunscHost(**kept["host"])
    tried: dict[str, str] = {}
    for candidate in _listed_platforms(runsc):
        tried[candidate] = _probe(runsc, candidate, prefix)
        if tried[candidate] == "ok":
            host = RunscHost(runsc, version, candidate, tried)
            _keep(cache, {"key": key, "host": asdict(host)})
            return host
    reasons = "; ".join(f"{name}: {why}" for name, why in tried.items())
    raise BackendUnavailable(
        f"runsc starts no sandbox on this host ({reasons}); see `runsc --debug do true`, "
        "or choose --backend process"
    )


def _keep(cache: Path, content: dict[str, object]) -> None:
    with contextlib.suppress(OSError):
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(content))
        partial.replace(cache)


def box_flags(host: RunscHost, network: str, *, host_sockets: bool) -> list[str]:
    """runsc's global flags for a box: rootless (runsc, its sandbox and gofer hold only
    the launching user's rights), the platform, the bundle's seccomp filter enforced, the
    network, and whether the box may connect to host unix sockets bound into it (its
    egress proxy's)."""
    flags = ["--rootless", f"--platform={host.platform}", "--ignore-cgroups", "--oci-seccomp"]
    flags.append("--network=host" if network == "host" else "--network=none")
    if host_sockets:
        flags.append("--host-uds=open")
    return flags
