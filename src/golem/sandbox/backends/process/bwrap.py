"""The bubblewrap command line of a box (a pure function of the spec: easy to test)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from golem.core.spec import BOX_PATH, WORKSPACE, BoxSpec
from golem.sandbox.contracts import Mount

__all__ = ["BOX_PATH", "BwrapLayout", "bwrap_argv"]

SHM_SIZE = 64 * 1024**2
RUN_SIZE = 1024**2


@dataclass(frozen=True)
class BwrapLayout:
    """What the box's file system is made of."""

    root: Path | None  # an image directory, or None for the host's system directories
    host_paths: tuple[str, ...]
    workspace: Path | None  # host directory bound read-write at /workspace
    seccomp_fd: int | None
    mounts: tuple[Mount, ...] = ()  # bound read-only; optional ones already filtered


def _host_root_args(host_paths: tuple[str, ...]) -> list[str]:
    args: list[str] = []
    for path in host_paths:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _mount_args(mounts: tuple[Mount, ...]) -> list[str]:
    """Read-only binds; those under /run go on a small tmpfs there (an image's /run is
    read-only, so mount points could not be made in it)."""
    args: list[str] = []
    if any(m.target.startswith("/run/") for m in mounts):
        args += ["--size", str(RUN_SIZE), "--perms", "0755", "--tmpfs", "/run"]
    for mount in mounts:
        args += ["--ro-bind", str(mount.source), mount.target]
    if any(m.target.startswith("/run/") for m in mounts):
        args += ["--remount-ro", "/run"]
    return args


def bwrap_argv(bwrap: str, spec: BoxSpec, layout: BwrapLayout, command: list[str]) -> list[str]:
    """Arguments that start ``command`` as the first process of a box made from ``spec``."""
    uid, gid = spec.uid_gid
    args = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-user",
        "--uid",
        str(uid),
        "--gid",
        str(gid),
        "--disable-userns",
        "--unshare-pid",
        "--as-pid-1",  # the supervisor is init: no process the box can write sits above it
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup",
        "--hostname",
        "golem",
        "--cap-drop",
        "ALL",
    ]
    if spec.network == "host":
        args.append("--share-net")
    else:  # none, and filtered: only lo, and the proxy through a mounted socket
        args.append("--unshare-net")
    if layout.root is not None:
        args += ["--ro-bind", str(layout.root), "/"]
    else:
        args += _host_root_args(layout.host_paths)
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(SHM_SIZE), "--perms", "1777", "--tmpfs", "/dev/shm"]
    args += ["--size", str(spec.tmp_size), "--perms", "1777", "--tmpfs", "/tmp"]
    if layout.workspace is not None:
        args += ["--bind", str(layout.workspace), WORKSPACE]
    else:
        args += ["--size", str(spec.workspace_size), "--perms", "0755", "--tmpfs", WORKSPACE]
    args += _mount_args(layout.mounts)
    args += ["--remount-ro", "/", "--remount-ro", "/dev"]
    args += ["--chdir", WORKSPACE]
    if layout.seccomp_fd is not None:
        args += ["--seccomp", str(layout.seccomp_fd)]
    return [*args, "--", *command]
