"""The process backend: each box is a bubblewrap sandbox whose first process is the supervisor.

When golem runs as root, bubblewrap itself runs as an unprivileged host user (``run_as``),
so the box never holds root's permissions on host files, even mapped through its user
namespace. Limits come from cgroups when the machine allows, with rlimits as a second line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
from collections.abc import Sequence
from pathlib import Path

from golem.core.config import ProcessBackendConfig
from golem.core.errors import BackendUnavailable, ImageNotFound, InvalidRequest
from golem.core.spec import BoxSpec
from golem.sandbox.backends.process.bwrap import BOX_PATH, BwrapLayout, bwrap_argv
from golem.sandbox.backends.process.cgroups import BoxCgroup, CgroupLimits
from golem.sandbox.backends.process.channel import PipeChannel
from golem.sandbox.backends.process.launch import (
    check_reachable,
    check_writable,
    host_ids,
    launcher,
    preexec,
)
from golem.sandbox.backends.process.seccomp import compile_filter
from golem.sandbox.contracts import Mount
from golem.sandbox.records import BoxRecord, process_alive, process_start_time
from golem.sandbox.supervisor import supervisor_source

__all__ = ["ProcessBackend", "ProcessBox"]

STDERR_TAIL = 4000


class ProcessBox:
    """A running bubblewrap box."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        cgroup: BoxCgroup | None,
    ) -> None:
        self.process = process
        self.reader, self.writer = streams
        self.cgroup = cgroup
        self._stderr = bytearray()
        self._stderr_task = asyncio.create_task(self._collect_stderr())
        self._stopped = False

    async def _collect_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]

    def describe_loss(self) -> str:
        """bubblewrap's own words, when it failed, or how the box ended."""
        text = self._stderr.decode(errors="replace").strip()
        code = self.process.returncode
        reason = "the box exited" if code is None else f"the box exited with status {code}"
        return f"{reason}: {text}" if text else reason

    def oom_kills(self) -> int:
        """OOM kills counted by the box's memory cgroup."""
        return self.cgroup.oom_kills() if self.cgroup else 0

    def peak_memory(self) -> int:
        """Peak memory of the box's cgroup."""
        return self.cgroup.peak_memory() if self.cgroup else 0

    async def stop(self) -> None:
        """Kill bubblewrap and everything in the box, and remove its cgroups."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(Exception):
            self.writer.close()
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        self._stderr_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._stderr_task
        if self.cgroup is not None:
            await asyncio.to_thread(self.cgroup.remove)


class ProcessBackend:
    """Starts boxes with bubblewrap on this machine."""

    name = "process"

    def __init__(self, config: ProcessBackendConfig) -> None:
        self.config = config

    def close(self) -> None:
        """Nothing to release: the process backend holds no connection."""

    def check(self) -> None:
        """Fail with what to install when bubblewrap or python3 is missing."""
        if shutil.which(self.config.bwrap) is None:
            raise BackendUnavailable(
                f"bubblewrap ({self.config.bwrap}) is not installed; run scripts/setup "
                "or `apt-get install bubblewrap`, or choose --backend docker"
            )

    def _layout(
        self, spec: BoxSpec, ids: tuple[int, int] | None, mounts: Sequence[Mount]
    ) -> BwrapLayout:
        """Check the spec's directories: they must exist and be reachable by bubblewrap."""
        if not spec.read_only_root:
            raise InvalidRequest(
                "the process backend keeps the root file system read-only; write to "
                "/workspace or /tmp, or use --backend docker for a writable root"
            )
        root = None
        if spec.image is not None:
            root = Path(spec.image)
            if not root.is_dir():
                raise ImageNotFound(
                    f"image {spec.image!r} is not a directory; the process backend takes a "
                    "root file system directory (or no --image for the host's system)"
                )
            for mount_point in ("proc", "dev", "tmp", "workspace"):
                if not (root / mount_point).is_dir():
                    raise ImageNotFound(
                        f"image directory {root} has no /{mount_point}; create it "
                        f"(mkdir {root / mount_point}) so the box can mount it"
                    )
        workspace = spec.workspace
        if workspace is not None:
            if not workspace.is_dir():
                raise InvalidRequest(f"workspace {workspace} is not a directory; create it first")
            if ids is not None:
                check_writable(workspace, ids, self.config.run_as)
        for directory in (root, workspace):
            if directory is not None and ids is not None:
                check_reachable(directory, ids, self.config.run_as)
        for mount in mounts:
            if ids is not None:
                check_reachable(mount.source, ids, self.config.run_as)
        kept = tuple(m for m in mounts if not m.optional or self._in_root(root, m.target))
        seccomp_fd = _memfd("golem-seccomp", compile_filter()) if self.config.seccomp else None
        return BwrapLayout(
            root=root,
            host_paths=tuple(self.config.host_paths),
            workspace=workspace,
            seccomp_fd=seccomp_fd,
            mounts=kept,
        )

    def tree_copier(self, path: Path) -> str | None:
        """The interpreter in the box that makes a kept tree's links
        (``golem.sandbox.kept_trees``), when boxes can bind ``path``: reachable by the
        ``run_as`` user when golem runs as root; None otherwise."""
        ids = host_ids(self.config.run_as)
        if ids is not None:
            try:
                check_reachable(path, ids, self.config.run_as)
            except InvalidRequest:
                return None
        return self.config.python

    def _in_root(self, root: Path | None, target: str) -> bool:
        """Whether ``target`` exists in the box's root (an image, or the host's paths)."""
        if root is not None:
            return (root / target.lstrip("/")).exists()
        return Path(target).exists() and any(
            target.startswith(path.rstrip("/") + "/") for path in self.config.host_paths
        )

    async def start(
        self, spec: BoxSpec, record: BoxRecord, mounts: Sequence[Mount] = ()
    ) -> ProcessBox:
        """Start bubblewrap with the supervisor as the box's command."""
        self.check()
        ids = host_ids(self.config.run_as)
        layout = self._layout(spec, ids, mounts)
        channel = PipeChannel.create()
        cgroup = None
        try:
            if self.config.cgroups == "auto":
                limits = CgroupLimits(memory=spec.memory, pids=spec.pids, cpus=spec.cpus)
                cgroup = await asyncio.to_thread(BoxCgroup.create, record.id, limits)
            record.state = {
                "cgroup_version": cgroup.version if cgroup else None,
                "cgroup_dirs": [str(d) for d in cgroup.dirs] if cgroup else [],
            }
            command = [self.config.python, "-I", "-S", "-u", "-c", supervisor_source()]
            command += [str(fd) for fd in channel.box_fds]
            argv = bwrap_argv(self.config.bwrap, spec, layout, command)
            inherited = [*channel.box_fds, *([layout.seccomp_fd] if layout.seccomp_fd else [])]
            process = await self._spawn(argv, spec, cgroup, ids, inherited)
        except BaseException:
            channel.close_all()
            if cgroup is not None:
                await asyncio.to_thread(cgroup.remove)
            raise
        finally:
            if layout.seccomp_fd is not None:
                os.close(layout.seccomp_fd)
        channel.close_box_ends()
        record.state.update(pid=process.pid, pid_start=process_start_time(process.pid))
        return ProcessBox(process, await channel.host_streams(), cgroup)

    async def _spawn(
        self,
        argv: list[str],
        spec: BoxSpec,
        cgroup: BoxCgroup | None,
        ids: tuple[int, int] | None,
        inherited: list[int],
    ) -> asyncio.subprocess.Process:
        env = {"PATH": BOX_PATH, "LANG": "C.UTF-8", "GOLEM_WORKSPACE": "/workspace"}
        prefix = launcher(cgroup, ids)
        setup = None
        cgroup_fds: list[int] = []
        if prefix is None:  # no cgroups (or no setpriv): rlimits through preexec_fn
            rlimits = [(resource.RLIMIT_CORE, 0)]
            if cgroup is None:  # a second line only: rlimits count per host user
                if spec.memory is not None:
                    rlimits.append((resource.RLIMIT_AS, spec.memory))
                if spec.pids is not None:
                    rlimits.append((resource.RLIMIT_NPROC, spec.pids))
            cgroup_fds = cgroup.open_procs() if cgroup else []
            setup = preexec(cgroup_fds, rlimits, ids)
        try:
            return await asyncio.create_subprocess_exec(
                *(prefix or []),
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd="/",
                pass_fds=inherited,
                preexec_fn=setup,
                start_new_session=True,
                limit=1 << 20,
            )
        except OSError as exc:
            raise BackendUnavailable(f"cannot start bubblewrap: {exc}") from exc
        finally:
            for fd in cgroup_fds:
                os.close(fd)

    async def cleanup(self, record: BoxRecord) -> None:
        """Kill an orphan's processes and remove its cgroups."""
        pid = record.state.get("pid")
        if isinstance(pid, int) and process_alive(pid, record.state.get("pid_start")):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        dirs = record.state.get("cgroup_dirs") or []
        version = record.state.get("cgroup_version")
        if dirs and version:
            await asyncio.to_thread(BoxCgroup.from_dirs(version, dirs).remove)


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name)  # close-on-exec; pass_fds hands it to bwrap alone
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
