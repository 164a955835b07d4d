"""The disk of a box's container engine: an ext4 file system on a sparse, nameless file.

It is made per box in golem's own directory with O_TMPFILE, so it has no name on the host
and its blocks go back when QEMU (its last holder) ends, however the box ends. The host
writes it once (mkfs) and never reads it: what the guest writes there stays data in a file
that nothing on the host opens.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from golem.core.errors import BackendUnavailable, SandboxError

__all__ = ["engine_disk"]

LABEL = "golem-engine"


def engine_disk(directory: Path, size: int, owner: tuple[int, int] | None) -> int:
    """A descriptor of a new ``size``-byte engine disk in ``directory``, owned by ``owner``
    (QEMU's user and group, when golem is root) so that QEMU can open /dev/fd/N."""
    mkfs = shutil.which("mkfs.ext4") or "/usr/sbin/mkfs.ext4"
    if not os.path.exists(mkfs):
        raise BackendUnavailable("mkfs.ext4 is missing; install e2fsprogs")
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise SandboxError(
            f"cannot make a nameless file in {directory} for a box's container engine "
            f"({exc.strerror}); put engine.backend.assets_dir on a file system that has "
            "O_TMPFILE (ext4, xfs, btrfs, tmpfs)"
        ) from exc
    try:
        _format(mkfs, fd, size)
        if owner is not None:
            os.fchown(fd, *owner)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd


def _format(mkfs: str, fd: int, size: int) -> None:
    os.ftruncate(fd, size)
    argv = [mkfs, "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-m", "0", "-L", LABEL]
    argv += ["-E", "lazy_itable_init=1,nodiscard", f"/dev/fd/{fd}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, pass_fds=[fd])
    if done.returncode != 0:
        raise SandboxError(f"mkfs.ext4 could not make the engine's disk: {done.stderr.strip()}")
