"""Per-box cgroups for memory, pids and cpu limits, on cgroup v2 or v1 (also hybrids).

v1: a ``golem/<box>`` group under golem's own group in each of the memory, pids and cpu
hierarchies. v2: ``golem/<box>`` under the unified root, when golem may create it there and
the controllers can be enabled. Without either, limits fall back to rlimits (see backend).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from golem.core.errors import InvalidRequest

__all__ = ["BoxCgroup", "CgroupLimits", "cgroup_support"]

ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class CgroupLimits:
    """The limits to enforce; None means no cap."""

    memory: int | None
    pids: int | None
    cpus: float | None


def _own_v1_path(controller: str) -> str | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return None


def _v2_usable() -> bool:
    controllers = ROOT / "cgroup.controllers"
    if not controllers.is_file():
        return False
    available = set(controllers.read_text().split())
    return {"memory", "pids"} <= available and os.access(ROOT, os.W_OK)


def _v1_parents() -> dict[str, Path] | None:
    parents: dict[str, Path] = {}
    for controller in V1_CONTROLLERS:
        own = _own_v1_path(controller)
        hierarchy = ROOT / controller
        if own is None or not (hierarchy / "cgroup.procs").is_file():
            return None
        parent = hierarchy / own.lstrip("/") / "golem"
        if not os.access(parent if parent.exists() else parent.parent, os.W_OK):
            return None
        parents[controller] = parent
    return parents


def cgroup_support() -> str:
    """``"v2"``, ``"v1"`` or ``"none"``: how this machine can enforce box limits."""
    if _v2_usable():
        return "v2"
    if _v1_parents() is not None:
        return "v1"
    return "none"


@dataclass
class BoxCgroup:
    """The cgroup directories of one box; create, join (from preexec), read, remove."""

    version: str
    dirs: list[Path] = field(default_factory=list)

    @classmethod
    def create(cls, box_id: str, limits: CgroupLimits) -> BoxCgroup | None:
        """Make the box's cgroups and set their limits, or return None when unsupported."""
        version = cgroup_support()
        if version == "v2":
            group = cls("v2", [ROOT / "golem" / box_id])
        elif version == "v1":
            parents = _v1_parents()
            assert parents is not None
            group = cls("v1", [parents[c] / box_id for c in V1_CONTROLLERS])
        else:
            return None
        try:
            if version == "v2":
                group._create_v2(limits)
            else:
                group._create_v1(limits)
        except BaseException as exc:
            group.remove()  # the directories made before the failure go with it
            if isinstance(exc, OSError):
                raise InvalidRequest(
                    f"the kernel refused the box's cgroup limits {limits} ({exc}); "
                    "ask for other limits, or set engine.backend.cgroups = 'off'"
                ) from exc
            raise
        return group

    @classmethod
    def of_process(cls, pid: int) -> BoxCgroup | None:
        """The memory cgroup another manager (a container engine) put ``pid`` in."""
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            _, names, path = line.split(":", 2)
            if "memory" in names.split(","):
                return cls("v1", [ROOT / "memory" / path.lstrip("/")])
            if names == "" and (ROOT / "cgroup.controllers").is_file():
                return cls("v2", [ROOT / path.lstrip("/")])
        return None

    @classmethod
    def from_dirs(cls, version: str, dirs: list[str]) -> BoxCgroup:
        """Rebuild from a box record (for prune)."""
        return cls(version, [Path(d) for d in dirs])

    def _create_v2(self, limits: CgroupLimits) -> None:
        parent = ROOT / "golem"
        parent.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            (ROOT / "cgroup.subtree_control").write_text("+memory +pids +cpu")
        with contextlib.suppress(OSError):
            (parent / "cgroup.subtree_control").write_text("+memory +pids +cpu")
        group = self.dirs[0]
        group.mkdir(exist_ok=True)
        if limits.memory is not None:
            (group / "memory.max").write_text(str(limits.memory))
            with contextlib.suppress(OSError):
                (group / "memory.swap.max").write_text("0")
        if limits.pids is not None:
            (group / "pids.max").write_text(str(limits.pids))
        if limits.cpus is not None:
            self.limit_cpus(limits.cpus)

    def _create_v1(self, limits: CgroupLimits) -> None:
        memory, pids, _cpu = self.dirs
        for group in self.dirs:
            group.mkdir(parents=True, exist_ok=True)
        if limits.memory is not None:
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory))
            with contextlib.suppress(OSError):  # only with swap accounting on
                (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory))
            with contextlib.suppress(OSError):
                (memory / "memory.swappiness").write_text("0")
        if limits.pids is not None:
            (pids / "pids.max").write_text(str(limits.pids))
        if limits.cpus is not None:
            self.limit_cpus(limits.cpus)

    def limit_cpus(self, cpus: float) -> None:
        """Cap the box at ``cpus`` cores (a CFS quota per 100 ms period)."""
        quota = int(cpus * CPU_PERIOD_US)
        if self.version == "v2":
            group = self.dirs[0]
            if (group / "cpu.max").exists():
                (group / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
            return
        cpu = self.dirs[2]
        (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
        (cpu / "cpu.cfs_quota_us").write_text(str(quota))

    def open_procs(self) -> list[int]:
        """Open each cgroup.procs for writing, so a forked child can join without lookups."""
        return [os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for group in self.dirs]

    def oom_kills(self) -> int:
        """How many processes of the box the kernel killed for memory so far."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            text = (self.dirs[0] / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def pids_refused(self) -> int:
        """How many forks the box's pids limit refused so far."""
        group = self.dirs[0] if self.version == "v2" else self.dirs[1]
        try:
            text = (group / "pids.events").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "max":
                return int(value)
        return 0

    def peak_memory(self) -> int:
        """The box's peak memory use in bytes (0 when the kernel does not say)."""
        name = "memory.peak" if self.version == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((self.dirs[0] / name).read_text())
        except (OSError, ValueError):
            return 0

    def pids(self) -> set[int]:
        """Every process still in the box's cgroups."""
        found: set[int] = set()
        for group in self.dirs:
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
        return found

    def kill_all(self) -> None:
        """SIGKILL every process in the box's cgroups (cgroup.kill on v2)."""
        if self.version == "v2":
            with contextlib.suppress(OSError):
                (self.dirs[0] / "cgroup.kill").write_text("1")
        for _ in range(100):  # a fork racing the kill shows up in the next round
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left and remove the directories (a cgroup with members cannot go)."""
        self.kill_all()
        for group in self.dirs:
            for _ in range(100):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill_all()
                    time.sleep(0.02)
