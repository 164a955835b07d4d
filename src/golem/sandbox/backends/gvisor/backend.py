"""The gvisor backend: each box is a gVisor sandbox (runsc, started by golem itself, no
daemon) whose first process is the supervisor, on the container's stdin and stdout.

The box's system calls go to gVisor's own kernel (the Sentry), not the host's; its files
come through runsc's gofer. runsc runs rootless: as golem's user, or, when golem runs as
root, as the unprivileged ``run_as`` user (as bubblewrap does), so neither the Sentry nor
the gofer holds root's permissions on host files. Limits come from the same cgroups as
the process backend's, which hold runsc and everything it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import resource
import shutil
import signal
import time
from collections.abc import Sequence
from pathlib import Path

from golem.core.config import GvisorBackendConfig
from golem.core.errors import BackendUnavailable, ImageNotFound, InvalidRequest
from golem.core.spec import MAX_PIDS, BoxSpec
from golem.sandbox.backends.gvisor.bundle import (
    BundleLayout,
    make_run_dir,
    make_skeleton,
    oci_config,
)
from golem.sandbox.backends.gvisor.channel import HostStreams, SocketChannel
from golem.sandbox.backends.gvisor.runsc import RunscHost, box_flags, find_runsc, runsc_host
from golem.sandbox.backends.process.cgroups import BoxCgroup, CgroupLimits
from golem.sandbox.backends.process.launch import (
    as_user,
    check_reachable,
    check_writable,
    host_ids,
    launcher,
)
from golem.sandbox.backends.process.seccomp import gvisor_profile
from golem.sandbox.contracts import Mount
from golem.sandbox.records import BoxRecord, process_alive, process_start_time
from golem.sandbox.supervisor import supervisor_source

__all__ = ["GvisorBackend", "GvisorBox"]

log = logging.getLogger(__name__)

STDERR_TAIL = 4000
SENTRY_PIDS = 256
"""Host threads gVisor itself needs (its Sentry and gofer, ~50 at rest), beside the box's."""
PIDS_PER_TASK = 16
"""Host threads per task of the box: gVisor on ptrace uses some 13 per task under a fork
bomb (a stub thread and Sentry threads in host system calls); measured 844 for 64 tasks,
2,773 for 256."""


class GvisorBox:
    """A running gVisor box."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        streams: HostStreams,
        cgroup: BoxCgroup | None,
        record: BoxRecord,
    ) -> None:
        self.process = process
        self.streams = streams
        self.reader, self.writer = streams.reader, streams.writer
        self.cgroup = cgroup
        self.record = record
        self._stderr = bytearray()
        self._stderr_task = asyncio.create_task(self._collect_stderr(streams.stderr))
        self._stopped = False

    @property
    def platform(self) -> str:
        """The gVisor platform the box runs on (ptrace, kvm, systrap)."""
        return str(self.record.state["runsc"]["platform"])

    @property
    def flags(self) -> list[str]:
        """The flags golem started runsc with for this box (its isolation reports them)."""
        return list(self.record.state["runsc_flags"])

    async def _collect_stderr(self, stderr: asyncio.StreamReader) -> None:
        while chunk := await stderr.read(65536):
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]

    def describe_loss(self) -> str:
        """runsc's own words, when it failed, or how the box ended."""
        text = self._stderr.decode(errors="replace").strip()
        code = self.process.returncode
        reason = "the sandbox exited" if code is None else f"the sandbox exited with status {code}"
        return f"{reason}: {text}" if text else reason

    def oom_kills(self) -> int:
        """OOM kills counted by the box's memory cgroup."""
        return self.cgroup.oom_kills() if self.cgroup else 0

    def peak_memory(self) -> int:
        """Peak memory of the box's cgroup (the Sentry, its gofer and the box's memory)."""
        return self.cgroup.peak_memory() if self.cgroup else 0

    def limits_struck(self) -> list[str]:
        """The host's limits on the whole sandbox that were reached: gVisor has no OOM
        killer of its own, so a box over its memory is stopped whole, and a box whose
        gVisor outgrows the host's thread backstop too."""
        struck = []
        if self.oom_kills():
            struck.append("its memory limit (gVisor's kernel and the box's processes)")
        if self.cgroup is not None and self.cgroup.pids_refused():
            struck.append("the host's limit on gVisor's threads (256 + 16 per box pid)")
        return struck

    async def stop(self) -> None:
        """Kill runsc, its sandbox and gofer, and remove the box's cgroups and bundle."""
        if self._stopped:
            return
        self._stopped = True
        if struck := self.limits_struck():
            log.warning("gVisor box %s reached %s", self.record.id, " and ".join(struck))
        self.streams.close()
        await remove_sandbox(self.record, self.cgroup)
        await self.process.wait()
        self._stderr_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._stderr_task


class GvisorBackend:
    """Starts boxes with runsc on this machine."""

    name = "gvisor"

    def __init__(self, config: GvisorBackendConfig) -> None:
        self.config = config
        self._host: RunscHost | None = None

    def close(self) -> None:
        """Nothing to release: runsc runs no daemon."""

    def check(self) -> None:
        """Fail with what to install when runsc is missing or starts no sandbox here."""
        find_runsc(self.config.runsc)
        self.host()

    def host(self) -> RunscHost:
        """runsc's version and the platform chosen for this host (tried once)."""
        if self._host is None:
            ids = host_ids(self.config.run_as)
            prefix = (as_user(ids) or []) if ids is not None else []
            self._host = runsc_host(
                self.config.runsc, self.config.platform, self._runtime_dir(), prefix
            )
        return self._host

    def _runtime_dir(self) -> Path:
        base = self.config.runtime_dir
        base.mkdir(parents=True, exist_ok=True)
        info = base.stat()
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise BackendUnavailable(
                f"{base} (engine.backend.runtime_dir) must be owned by this user and not "
                "writable by others; remove it or choose another"
            )
        base.chmod(0o711)  # the run_as user may pass through, not list
        return base

    def _layout(
        self, spec: BoxSpec, ids: tuple[int, int] | None, mounts: Sequence[Mount], box_dir: Path
    ) -> BundleLayout:
        """Check the spec's directories and make the box's own (skeleton root, /run)."""
        if not spec.read_only_root:
            raise InvalidRequest(
                "the gvisor backend keeps the root file system read-only; write to "
                "/workspace or /tmp, or use --backend docker for a writable root"
            )
        root = box_dir / "root"
        host_paths: tuple[str, ...] = tuple(self.config.host_paths)
        if spec.image is not None:
            root = Path(spec.image)
            host_paths = ()
            _check_image(root, with_run=any(m.target.startswith("/run/") for m in mounts))
        workspace = spec.workspace
        if workspace is not None:
            if not workspace.is_dir():
                raise InvalidRequest(f"workspace {workspace} is not a directory; create it first")
            if ids is not None:
                check_writable(workspace, ids, self.config.run_as)
        for directory in (root if spec.image else None, workspace, box_dir):
            if directory is not None and ids is not None:
                check_reachable(directory, ids, self.config.run_as)
        for mount in mounts:
            if ids is not None:
                check_reachable(mount.source, ids, self.config.run_as)
        kept = tuple(m for m in mounts if not m.optional or self._in_root(spec, root, m.target))
        if spec.image is None:
            make_skeleton(root, host_paths)
        run_dir = None
        if any(m.target.startswith("/run/") for m in kept):
            run_dir = box_dir / "run"
            make_run_dir(run_dir, kept)
        return BundleLayout(root, host_paths, workspace, kept, run_dir)

    def _in_root(self, spec: BoxSpec, root: Path, target: str) -> bool:
        """Whether ``target`` exists in the box's root (an image, or the host's paths)."""
        if spec.image is not None:
            return (root / target.lstrip("/")).exists()
        return Path(target).exists() and any(
            target.startswith(path.rstrip("/") + "/") for path in self.config.host_paths
        )

    async def start(
        self, spec: BoxSpec, record: BoxRecord, mounts: Sequence[Mount] = ()
    ) -> GvisorBox:
        """Write the box's bundle and start runsc with the supervisor as its process."""
        host = await asyncio.to_thread(self.host)
        ids = host_ids(self.config.run_as)
        box_dir = self._runtime_dir() / record.id
        box_dir.mkdir(mode=0o755)
        state_dir = box_dir / "state"
        flags = box_flags(host, spec.network, host_sockets=bool(mounts))
        record.state = {
            "box_dir": str(box_dir),
            "runsc_root": str(state_dir),
            "runsc": {"path": host.runsc, "version": host.version, "platform": host.platform},
            "runsc_flags": flags,
            "run_as": list(ids) if ids else None,
        }
        channel = SocketChannel.create()
        cgroup = None
        try:
            layout = self._layout(spec, ids, mounts, box_dir)
            state_dir.mkdir(mode=0o700)
            if ids is not None:
                os.chown(state_dir, *ids)
            if self.config.cgroups == "auto":
                cgroup = await asyncio.to_thread(BoxCgroup.create, record.id, _host_limits(spec))
            record.state["cgroup_version"] = cgroup.version if cgroup else None
            record.state["cgroup_dirs"] = [str(d) for d in cgroup.dirs] if cgroup else []
            command = [self.config.python, "-I", "-S", "-u", "-c", supervisor_source()]
            seccomp = gvisor_profile(full=self.config.seccomp)
            config = oci_config(spec, layout, command, _rlimits(spec, cgroup), seccomp)
            (box_dir / "config.json").write_text(json.dumps(config))
            argv = [host.runsc, *flags, "--root", str(state_dir)]
            argv += ["run", "--bundle", str(box_dir), record.id]
            process = await self._spawn(argv, channel, cgroup, ids)
        except BaseException:
            channel.close_all()
            await remove_sandbox(record, cgroup)
            raise
        channel.close_box_ends()
        record.state.update(pid=process.pid, pid_start=process_start_time(process.pid))
        booted = functools.partial(_cap_cpus, cgroup, spec.cpus) if cgroup else None
        return GvisorBox(process, await channel.host_streams(booted), cgroup, record)

    async def _spawn(
        self,
        argv: list[str],
        channel: SocketChannel,
        cgroup: BoxCgroup | None,
        ids: tuple[int, int] | None,
    ) -> asyncio.subprocess.Process:
        prefix = launcher(cgroup, ids)
        if prefix is None and ids is not None:
            prefix = as_user(ids)
            if prefix is None:
                raise BackendUnavailable(
                    "setpriv (util-linux) is missing: golem cannot start runsc as "
                    f"{self.config.run_as!r}; install util-linux"
                )
        try:
            return await asyncio.create_subprocess_exec(
                *(prefix or []),
                *argv,
                stdin=channel.box.fileno(),
                stdout=channel.box.fileno(),
                stderr=channel.box_stderr.fileno(),
                env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")},
                cwd="/",
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendUnavailable(f"cannot start runsc: {exc}") from exc

    async def cleanup(self, record: BoxRecord) -> None:
        """Kill an orphan's runsc, sandbox and gofer; remove its cgroups and bundle."""
        dirs = record.state.get("cgroup_dirs") or []
        version = record.state.get("cgroup_version")
        cgroup = BoxCgroup.from_dirs(version, dirs) if dirs and version else None
        pid = record.state.get("pid")
        if isinstance(pid, int) and process_alive(pid, record.state.get("pid_start")):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        await remove_sandbox(record, cgroup)


def _check_image(root: Path, *, with_run: bool) -> None:
    if not root.is_dir():
        raise ImageNotFound(
            f"image {root} is not a directory; the gvisor backend takes a root file system "
            "directory (`golem image bootstrap` makes one), or no --image for the host's system"
        )
    needed = ("proc", "dev", "tmp", "workspace", *(("run",) if with_run else ()))
    for mount_point in needed:
        if not (root / mount_point).is_dir():
            raise ImageNotFound(
                f"image directory {root} has no /{mount_point}; create it "
                f"(mkdir {root / mount_point}) so the box can mount it"
            )


def _host_limits(spec: BoxSpec) -> CgroupLimits:
    """The box's cgroup holds gVisor too: its memory counts (the Sentry, the gofer, ~35 MB),
    its threads do not count as the box's (the box's own are capped inside, by gVisor's
    RLIMIT_NPROC), and the CPU quota is set once the box has booted (``_cap_cpus``)."""
    pids = None
    if spec.pids is not None:
        pids = min(SENTRY_PIDS + PIDS_PER_TASK * spec.pids, MAX_PIDS)
    return CgroupLimits(memory=spec.memory, pids=pids, cpus=None)


def _cap_cpus(cgroup: BoxCgroup, cpus: float | None) -> None:
    """The box has booted (its supervisor spoke): from now on it runs within ``cpus``.
    gVisor's own start costs some 0.3 s of CPU, which would take 30 s at 0.01 cores."""
    if cpus is None:
        return
    try:
        cgroup.limit_cpus(cpus)
    except OSError:
        cgroup.kill_all()  # never a box without the CPU cap it asked for


def _rlimits(spec: BoxSpec, cgroup: BoxCgroup | None) -> dict[str, int]:
    """The box's rlimits inside gVisor: its processes and threads (gVisor counts them, not
    the host); without cgroups, its memory per process as a second line."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = hard if hard != resource.RLIM_INFINITY else soft
    limits = {"RLIMIT_CORE": 0, "RLIMIT_NOFILE": files}
    if spec.pids is not None:
        limits["RLIMIT_NPROC"] = spec.pids
    if cgroup is None and spec.memory is not None:
        limits["RLIMIT_AS"] = spec.memory
    return limits


async def remove_sandbox(record: BoxRecord, cgroup: BoxCgroup | None) -> None:
    """Kill everything a box's runsc started and remove what it left: the cgroups (whose
    members are all of it), else the sandbox and gofer runsc's state names; then the
    bundle."""
    if cgroup is not None:
        await asyncio.to_thread(cgroup.remove)
    else:
        await asyncio.to_thread(_kill_from_state, record)
    box_dir = record.state.get("box_dir")
    if box_dir:
        await asyncio.to_thread(_remove_dir, Path(box_dir))


def _remove_dir(path: Path) -> None:
    """Remove the bundle; runsc, dying, may still remove its state files in it meanwhile."""
    for _ in range(100):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.02)  # teardown only: a dying runsc's last unlink


def _kill_from_state(record: BoxRecord) -> None:
    """SIGKILL the sandbox and gofer of runsc's state files (a sandbox's ptrace stubs die
    with it), each only while its command line still names the box's bundle: a hung
    sandbox never answers ``runsc delete``, and a pid may have been reused."""
    root, box_dir = record.state.get("runsc_root"), record.state.get("box_dir")
    if not root or not box_dir:
        return
    for state in Path(root).glob("*.state"):
        try:
            content = json.loads(state.read_text())
            pids = [content["sandbox"]["pid"], content["goferPid"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for pid in pids:
            if isinstance(pid, int) and pid > 0 and _names(pid, box_dir):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


def _names(pid: int, box_dir: str) -> bool:
    try:
        return box_dir.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
