"""How a daemonless box's first host process starts (bubblewrap, or runsc): as an
unprivileged host user when golem runs as root, in the box's cgroups, with rlimits as a
second line where there are none. The gvisor backend starts runsc this same way."""

from __future__ import annotations

import os
import pwd
import resource
import shutil
from collections.abc import Callable
from pathlib import Path

from golem.core.errors import BackendUnavailable, InvalidRequest
from golem.sandbox.backends.process.cgroups import BoxCgroup

__all__ = ["as_user", "check_reachable", "check_writable", "host_ids", "launcher", "preexec"]


def host_ids(run_as: str) -> tuple[int, int] | None:
    """The uid and gid of ``run_as`` when golem runs as root (None otherwise: boxes run as
    golem's own user then)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(run_as)
    except KeyError:
        raise BackendUnavailable(
            f"host user {run_as!r} (engine.backend.run_as) does not exist; "
            "create it or name another unprivileged user"
        ) from None
    if entry.pw_uid == 0:
        raise BackendUnavailable("engine.backend.run_as must not be a root user")
    return entry.pw_uid, entry.pw_gid


def preexec(
    cgroup_fds: list[int], rlimits: list[tuple[int, int]], ids: tuple[int, int] | None
) -> Callable[[], None]:
    """Runs in the forked child before the box starts: join cgroups, cap, drop privileges."""

    def setup() -> None:
        pid = str(os.getpid()).encode()
        for fd in cgroup_fds:
            os.write(fd, pid)  # a cgroup.procs file takes a pid whole or refuses it
        for which, value in rlimits:
            _soft, hard = resource.getrlimit(which)
            capped = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (capped, capped))
        if ids is not None:
            uid, gid = ids
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

    return setup


# Joins the cgroups given before "--", then runs the rest. Everything arrives as
# positional arguments: nothing is ever spliced into this script.
_JOIN_CGROUPS = (
    'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f"; shift; done; shift; '
    'ulimit -c 0; exec "$@"'
)


def launcher(cgroup: BoxCgroup | None, ids: tuple[int, int] | None) -> list[str] | None:
    """A command prefix that joins the box's cgroups and drops to the ``run_as`` user.

    Doing this in an exec chain (sh, then setpriv) instead of ``preexec_fn`` lets Python
    spawn with vfork; forking golem's own large process cost ~10 ms per box.
    """
    if cgroup is None:
        return None
    prefix = ["/bin/sh", "-c", _JOIN_CGROUPS, "golem-box"]
    prefix += [str(group / "cgroup.procs") for group in cgroup.dirs] + ["--"]
    if ids is not None:
        drop = as_user(ids)
        if drop is None:
            return None
        prefix += drop
    return prefix


def as_user(ids: tuple[int, int]) -> list[str] | None:
    """A command prefix that runs the rest as host user ``ids`` (None without setpriv)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    uid, gid = ids
    return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


def _permits(info: os.stat_result, ids: tuple[int, int], bits: int) -> bool:
    """Whether uid/gid ``ids`` get ``bits`` (a mask of r=4, w=2, x=1) on a file."""
    uid, gid = ids
    if info.st_uid == uid:
        return bool(info.st_mode >> 6 & bits)
    if info.st_gid == gid:
        return bool(info.st_mode >> 3 & bits)
    return bool(info.st_mode & bits)


def check_reachable(path: Path, ids: tuple[int, int], user: str) -> None:
    """InvalidRequest, with the fix, unless host user ``ids`` can reach ``path``."""
    for parent in reversed(path.resolve().parents):
        if not _permits(parent.stat(), ids, 1):
            raise InvalidRequest(
                f"{path} is not reachable by host user {user!r} that runs boxes: {parent} "
                f"has mode {parent.stat().st_mode & 0o777:04o}; move it, `chmod o+x {parent}`, "
                "or set engine.backend.run_as"
            )


def check_writable(path: Path, ids: tuple[int, int], user: str) -> None:
    """InvalidRequest, with the fix, unless host user ``ids`` can write the workspace."""
    if not _permits(path.stat(), ids, 3):
        raise InvalidRequest(
            f"workspace {path} is not writable by host user {user!r} that boxes run as; "
            f"`chown -R {user} {path}` or set engine.backend.run_as"
        )
