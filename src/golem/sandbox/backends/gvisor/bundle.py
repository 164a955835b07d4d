"""A gVisor box's OCI bundle: ``config.json`` (a pure function of the spec, easy to test)
and the directories runsc's gofer needs on the host.

The gofer (runsc's file server, running as the boxes' host user) makes no mount point of
its own in a root it may not write: the box's root directory holds every one. Without an
image that root is a skeleton of the box's own: the mount points and the host's system
directories (bound read-only) or their symlinks, as bubblewrap's. Mounts below /run (the
egress proxy's socket directory) go on a directory of the box's own bound at /run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.core.spec import BOX_PATH, WORKSPACE, BoxSpec
from golem.sandbox.contracts import Mount

__all__ = [
    "SHM_SIZE",
    "BundleLayout",
    "make_run_dir",
    "make_skeleton",
    "oci_config",
]

SHM_SIZE = 64 * 1024**2
MOUNT_POINTS = ("proc", "dev", "tmp", "workspace", "run")
TMPFS_FLAGS = ["nosuid", "nodev"]  # exec: compiled tests run where they were built
RUN = "/run"


@dataclass(frozen=True)
class BundleLayout:
    """What the box's file system is made of."""

    root: Path  # an image directory, or the box's skeleton (then ``host_paths`` are bound)
    host_paths: tuple[str, ...]
    workspace: Path | None  # host directory bound read-write at /workspace
    mounts: tuple[Mount, ...] = ()  # bound read-only; optional ones already filtered
    run_dir: Path | None = None  # bound read-only at /run when a mount goes below it


def make_skeleton(root: Path, host_paths: Sequence[str]) -> None:
    """A root of mount points for a box without an image: the host's system directories
    (bound later) and their symlinks (``/bin -> usr/bin``), made as they are on the host."""
    root.mkdir(mode=0o755)
    for name in MOUNT_POINTS:
        (root / name).mkdir(mode=0o755)
    for path in host_paths:
        target = root / path.lstrip("/")
        if os.path.islink(path):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(os.readlink(path))
        elif os.path.isdir(path):
            target.mkdir(parents=True, exist_ok=True)


def make_run_dir(run_dir: Path, mounts: Sequence[Mount]) -> None:
    """The directory bound at /run, holding the mount point of each mount below it."""
    run_dir.mkdir(mode=0o755)
    for mount in mounts:
        if mount.target.startswith(RUN + "/"):
            (run_dir / mount.target.removeprefix(RUN + "/")).mkdir(parents=True, exist_ok=True)


def _tmpfs(target: str, size: int, mode: str, *extra: str) -> dict[str, Any]:
    options = [f"size={size}", f"mode={mode}", *TMPFS_FLAGS, *extra]
    return {"destination": target, "type": "tmpfs", "source": "tmpfs", "options": options}


def _bind(source: Path | str, target: str, *, writable: bool = False) -> dict[str, Any]:
    options = ["rbind", "rw" if writable else "ro", "nosuid", "nodev"]
    return {"destination": target, "type": "bind", "source": str(source), "options": options}


def _mounts(spec: BoxSpec, layout: BundleLayout) -> list[dict[str, Any]]:
    uid, gid = spec.uid_gid
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
        _tmpfs("/dev/shm", SHM_SIZE, "1777"),
        _tmpfs("/tmp", spec.tmp_size, "1777"),
    ]
    if layout.workspace is not None:
        mounts.append(_bind(layout.workspace, WORKSPACE, writable=True))
    else:
        mounts.append(_tmpfs(WORKSPACE, spec.workspace_size, "755", f"uid={uid}", f"gid={gid}"))
    for path in layout.host_paths:
        if os.path.isdir(path) and not os.path.islink(path):
            mounts.append(_bind(path, path))
    if layout.run_dir is not None:
        mounts.append(_bind(layout.run_dir, RUN))
    mounts += [_bind(mount.source, mount.target) for mount in layout.mounts]
    return mounts


def oci_config(
    spec: BoxSpec,
    layout: BundleLayout,
    command: list[str],
    rlimits: dict[str, int],
    seccomp: dict[str, Any],
) -> dict[str, Any]:
    """The OCI runtime spec of a box whose first process is ``command``: no capabilities,
    no new privileges, a read-only root, namespaces of its own (the network's too, unless
    the spec asks for the host's), ``seccomp`` enforced by gVisor's kernel."""
    uid, gid = spec.uid_gid
    namespaces = ["pid", "ipc", "uts", "mount"]
    if spec.network != "host":
        namespaces.append("network")
    no_caps: dict[str, list[str]] = {
        kind: [] for kind in ("bounding", "effective", "inheritable", "permitted", "ambient")
    }
    env = [f"PATH={BOX_PATH}", "LANG=C.UTF-8", f"GOLEM_WORKSPACE={WORKSPACE}"]
    return {
        "ociVersion": "1.0.2",
        "process": {
            "user": {"uid": uid, "gid": gid, "additionalGids": []},
            "args": command,
            "env": env,
            "cwd": WORKSPACE,
            "capabilities": no_caps,
            "noNewPrivileges": True,
            "rlimits": [
                {"type": name, "soft": value, "hard": value} for name, value in rlimits.items()
            ],
        },
        "root": {"path": str(layout.root), "readonly": True},
        "hostname": "golem",
        "mounts": _mounts(spec, layout),
        "linux": {"namespaces": [{"type": name} for name in namespaces], "seccomp": seccomp},
    }
