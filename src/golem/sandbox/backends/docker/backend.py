"""The docker backend: each box is a container whose pid 1 is golem's supervisor.

Talks to the Docker Engine API through the docker SDK, so Podman's compatible socket works
the same (``docker_host``). Hardening by default: read-only root, sized tmpfs /workspace,
/tmp and /dev/shm (exec, so compiled tests run; nosuid, nodev), a non-root user, all
capabilities dropped, no new privileges, the engine's default seccomp profile (never
replaced), pids/memory/cpu limits, no engine socket in the box.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, NotFound
from docker.errors import ImageNotFound as DockerImageNotFound

from golem.core.config import DockerBackendConfig
from golem.core.errors import BackendUnavailable, ImageNotFound, InvalidRequest, SandboxError
from golem.core.spec import WORKSPACE, BoxSpec
from golem.sandbox.backends.docker.attach import AttachedStreams, open_attach
from golem.sandbox.backends.docker.reach import engine_url, unix_refusal
from golem.sandbox.backends.process.bwrap import BOX_PATH
from golem.sandbox.backends.process.cgroups import BoxCgroup
from golem.sandbox.backends.process.seccomp import engine_profile, gvisor_profile
from golem.sandbox.contracts import Mount
from golem.sandbox.records import BoxRecord
from golem.sandbox.supervisor import supervisor_source

__all__ = ["DockerBackend", "DockerBox"]

LABEL = "golem.box"
GVISOR = "runsc"
RUNSC_ARGS = ("--oci-seccomp", "--network=none", "--host-uds=open")
"""What dockerd must pass runsc for golem's boxes: golem's seccomp filter enforced by
gVisor, no network of gVisor's own (a box's network is none or the egress proxy's socket),
and the egress proxy's socket reachable (scripts/ensure-dockerd registers it so)."""
SHM_SIZE = 64 * 1024**2
# The engines mount a tmpfs noexec by default; compiled tests (cargo test, go test) run
# their binaries from the workspace and /tmp. no-new-privileges, no capabilities and nosuid
# keep a setuid file there without effect.
TMPFS_FLAGS = "exec,nosuid,nodev"


class DockerBox:
    """A running container box."""

    def __init__(self, api: docker.APIClient, container_id: str, streams: AttachedStreams) -> None:
        self.api = api
        self.container_id = container_id
        self.streams = streams
        self.reader = streams.reader
        self.writer = streams.writer
        self._cgroup: BoxCgroup | None = None
        self._stopped = False
        self.flags: list[str] = []
        """runsc's flags as dockerd passes them (a box on runsc; its isolation says them)."""
        self.platform: str | None = None
        """gVisor's platform among ``flags`` (None: runc, or runsc's own default)."""

    def attach_cgroup(self, host_pid: int) -> None:
        """Find the container's memory cgroup (for OOM counts), when it is on this host."""
        self._cgroup = BoxCgroup.of_process(host_pid) if host_pid else None

    def describe_loss(self) -> str:
        """The container's state and the tail of its log, for a box that failed to start."""
        try:
            state = self.api.inspect_container(self.container_id)["State"]
            logs = self.api.logs(self.container_id, stdout=False, stderr=True, tail=20)
        except DockerException as exc:
            return f"the container is gone ({exc})"
        text = logs.decode(errors="replace").strip()
        reason = f"the container exited with status {state.get('ExitCode')}"
        return f"{reason}: {text}" if text else reason

    def oom_kills(self) -> int:
        """OOM kills counted by the container's memory cgroup (0 when not on this host)."""
        return self._cgroup.oom_kills() if self._cgroup else 0

    def peak_memory(self) -> int:
        """Peak memory of the container's cgroup."""
        return self._cgroup.peak_memory() if self._cgroup else 0

    async def stop(self) -> None:
        """Remove the container (with everything in it)."""
        if self._stopped:
            return
        self._stopped = True
        await self.streams.close()
        await asyncio.to_thread(remove_container, self.api, self.container_id)


class DockerBackend:
    """Starts boxes as containers."""

    name = "docker"

    def __init__(self, config: DockerBackendConfig) -> None:
        self.config = config
        self._api: docker.APIClient | None = None
        self._podman: bool | None = None
        self._cpus: float | None = None
        self._runtime_args: list[str] = []

    @property
    def api(self) -> docker.APIClient:
        """The low-level client, connected on first use."""
        if self._api is None:
            refused = unix_refusal(self._base_url())
            try:
                if refused is None:
                    self._api = docker.APIClient(base_url=self._base_url(), version="auto")
            except DockerException as exc:
                refused = str(exc)
            if self._api is None:
                raise BackendUnavailable(
                    f"cannot reach a container engine at {self._base_url()}: {refused}; start "
                    "dockerd (or podman's socket) or set engine.backend.docker_host"
                )
        return self._api

    @property
    def base_url(self) -> str:
        """The engine socket this backend talks to."""
        return self._base_url()

    def _base_url(self) -> str:
        return engine_url(self.config.docker_host)

    def _is_podman(self) -> bool:
        if self._podman is None:
            components = self.api.version().get("Components") or []
            self._podman = any("podman" in str(c.get("Name", "")).lower() for c in components)
        return self._podman

    def _engine_cpus(self) -> float:
        if self._cpus is None:
            self._cpus = float(self.api.info().get("NCPU") or os.cpu_count() or 1)
        return self._cpus

    def close(self) -> None:
        """Close the connection to the engine."""
        if self._api is not None:
            self._api.close()
            self._api = None

    def check(self) -> None:
        """Fail with what to do when no engine answers, or when it lacks the runtime."""
        try:
            self.api.ping()
            info = self.api.info() if self.config.runtime is not None else {}
        except DockerException as exc:
            raise BackendUnavailable(
                f"the container engine at {self._base_url()} does not answer ({exc}); start "
                "dockerd or set engine.backend.docker_host"
            ) from exc
        if self.config.runtime is not None:
            self._check_runtime(self.config.runtime, info)

    def _check_runtime(self, runtime: str, info: dict[str, Any]) -> None:
        """The engine runs boxes on ``runtime``, as it is configured, or BackendUnavailable
        with the fix: never a box on another runtime than the one asked for."""
        if self._is_podman():
            default = info.get("DefaultRuntime")
            if default != runtime:
                raise BackendUnavailable(
                    "Podman's Docker-compatible API ignores a container's runtime: golem's "
                    f"boxes would run on {default!r}, not {runtime!r}; serve golem from a "
                    f'Podman service whose containers.conf says [engine] runtime = "{runtime}" '
                    "(docs/docker.md), or choose --backend gvisor"
                )
            return
        known = info.get("Runtimes") or {}
        if runtime not in known:
            raise BackendUnavailable(
                f"dockerd at {self._base_url()} has no OCI runtime {runtime!r} (it has "
                f"{', '.join(sorted(known)) or 'none'}); run scripts/ensure-dockerd, which "
                "registers runsc in /etc/docker/daemon.json and reloads dockerd, or register "
                "it there yourself"
            )
        args = [str(arg) for arg in known[runtime].get("runtimeArgs") or []]
        self._runtime_args = args
        missing = [arg for arg in RUNSC_ARGS if runtime == GVISOR and arg not in args]
        if missing:
            raise BackendUnavailable(
                f"dockerd runs {runtime} without {' '.join(missing)}: golem's seccomp filter "
                "or a filtered box's proxy would not hold; add them to the runtime's "
                "runtimeArgs in /etc/docker/daemon.json (scripts/ensure-dockerd does) and "
                "reload dockerd (kill -HUP)"
            )

    def _host_config(self, spec: BoxSpec, mounts: Sequence[Mount]) -> dict[str, Any]:
        uid, gid = spec.uid_gid
        # Podman ignores tmpfs mode= and refuses uid=; its U option hands the mount to the
        # container's user instead.
        podman = self._is_podman()
        shared = "U" if podman else "mode=1777"
        tmpfs = {"/tmp": f"size={spec.tmp_size},{TMPFS_FLAGS},{shared}"}
        tmpfs["/dev/shm"] = f"size={SHM_SIZE},{TMPFS_FLAGS},{shared}"
        binds = {}
        if spec.workspace is not None:
            binds[str(spec.workspace)] = {"bind": WORKSPACE, "mode": "rw"}
        else:
            owner = "U" if podman else f"mode=755,uid={uid},gid={gid}"
            tmpfs[WORKSPACE] = f"size={spec.workspace_size},{TMPFS_FLAGS},{owner}"
        for mount in mounts:
            binds[str(mount.source)] = {"bind": mount.target, "mode": "ro"}
        limits: dict[str, Any] = {}
        if spec.memory is not None:
            limits.update(mem_limit=spec.memory, memswap_limit=spec.memory)
        if spec.cpus is not None:  # past the engine's cores a cap caps nothing, and is refused
            limits["nano_cpus"] = int(min(spec.cpus, self._engine_cpus()) * 1e9)
        config: dict[str, Any] = self.api.create_host_config(
            read_only=spec.read_only_root,
            tmpfs=tmpfs,
            binds=binds or None,
            cap_drop=["ALL"],
            security_opt=self._security_options(),
            pids_limit=spec.pids,
            network_mode="host" if spec.network == "host" else "none",
            runtime=self.config.runtime,
            init=False,  # the supervisor is pid 1 and reaps orphans
            **limits,
        )
        return config

    def _security_options(self) -> list[str]:
        options = ["no-new-privileges"]
        if self.config.seccomp == "golem":
            # gVisor reads the filter itself, with names and errors of its own.
            if self.config.runtime == GVISOR:
                profile = json.dumps(gvisor_profile(), separators=(",", ":"))
            else:
                profile = engine_profile()
            # dockerd takes the profile inline; Podman's API takes a path on its host.
            options.append(f"seccomp={_profile_file(profile) if self._is_podman() else profile}")
        return options

    def _create(self, spec: BoxSpec, record: BoxRecord, mounts: Sequence[Mount]) -> str:
        uid, gid = spec.uid_gid
        image = spec.image or self.config.image
        labels = {
            LABEL: record.id,
            "golem.owner_pid": str(record.owner_pid),
            "golem.created": str(int(record.created)),
        }
        try:
            container = self.api.create_container(
                image,
                command=[self.config.python, "-I", "-S", "-u", "-c", supervisor_source()],
                user=f"{uid}:{gid}",
                stdin_open=True,
                tty=False,
                environment={"PATH": BOX_PATH, "LANG": "C.UTF-8", "GOLEM_WORKSPACE": WORKSPACE},
                working_dir=WORKSPACE,
                hostname="golem",
                name=record.id,  # so prune finds it by the record alone, even unsaved state
                labels=labels,
                host_config=self._host_config(spec, mounts),
            )
        except DockerImageNotFound:
            raise ImageNotFound(
                f"image {image!r} is not in the engine; build it (`golem image bootstrap` for "
                "golem's own) or name another with --image"
            ) from None
        except APIError as exc:
            if exc.is_client_error():  # the engine says the spec is wrong: the caller's to fix
                raise InvalidRequest(
                    f"the container engine refused the box's spec: {exc.explanation or exc}; "
                    "change the spec's values"
                ) from exc
            raise SandboxError(f"the engine refused the box: {exc.explanation or exc}") from exc
        return str(container["Id"])

    async def start(
        self, spec: BoxSpec, record: BoxRecord, mounts: Sequence[Mount] = ()
    ) -> DockerBox:
        """Create the container, attach to its stdio, then start it."""
        try:
            return await self._start(spec, record, mounts)
        except DockerException as exc:
            explanation = getattr(exc, "explanation", None) or exc
            raise SandboxError(
                f"the container engine could not start the box: {explanation}"
            ) from exc

    async def _start(self, spec: BoxSpec, record: BoxRecord, mounts: Sequence[Mount]) -> DockerBox:
        container_id = await asyncio.to_thread(self._create, spec, record, mounts)
        record.state = {"container": container_id, "docker_host": self._base_url()}
        if self.config.runtime == GVISOR:
            # gVisor lets a box process reopen its pid 1's descriptors (the engine's stdio
            # pipes, the supervisor's channel): such a box never serves another session.
            record.state.update(runtime=GVISOR, reusable=False)
        streams: AttachedStreams | None = None
        try:
            socket = await asyncio.to_thread(
                self.api.attach_socket,
                container_id,
                params={"stdin": 1, "stdout": 1, "stderr": 0, "stream": 1},
            )
            streams = await open_attach(socket)
            box = DockerBox(self.api, container_id, streams)
            if self.config.runtime == GVISOR:
                box.flags = list(self._runtime_args)
                box.platform = _platform(box.flags)
            await asyncio.to_thread(self.api.start, container_id)
            info = await asyncio.to_thread(self.api.inspect_container, container_id)
        except BaseException:
            if streams is not None:
                await streams.close()
            await asyncio.to_thread(remove_container, self.api, container_id)
            raise
        box.attach_cgroup(int(info["State"].get("Pid") or 0))
        return box

    async def cleanup(self, record: BoxRecord) -> None:
        """Remove an orphan's container."""
        container_id = record.state.get("container") or record.id
        await asyncio.to_thread(remove_container, self.api, container_id)


def _platform(flags: list[str]) -> str | None:
    """The ``--platform=`` among runsc's flags."""
    named = [flag.partition("=")[2] for flag in flags if flag.startswith("--platform=")]
    return named[-1] if named else None


def remove_container(api: docker.APIClient, container_id: str, attempts: int = 5) -> None:
    """Force-remove a container, which may be gone already. Podman refuses a removal that
    races the container's own exit ("container state improper"); the next one succeeds."""
    for attempt in range(attempts):
        try:
            api.remove_container(container_id, force=True)
        except NotFound:
            return
        except DockerException:
            if attempt == attempts - 1:
                return  # the engine keeps refusing: nothing more golem can do here
            continue
        return


def _profile_file(profile: str) -> str:
    """A seccomp profile as a file, in a directory only this user can write."""
    base = (
        Path("/run/golem")
        if os.geteuid() == 0
        else Path(os.environ.get("XDG_RUNTIME_DIR") or Path.home() / ".cache") / "golem"
    )
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    if base.stat().st_uid != os.geteuid() or base.stat().st_mode & 0o022:
        raise SandboxError(f"{base} is not private to this user; remove it and try again")
    path = base / f"seccomp-{hashlib.sha256(profile.encode()).hexdigest()[:12]}.json"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(profile)
        partial.replace(path)
    return str(path)
