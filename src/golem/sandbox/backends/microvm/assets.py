"""The guest's files: Debian's cloud kernel, golem's initramfs and root disks.

Each is made once and kept in ``assets_dir`` under a name that says what went into it: the
kernel under its package's file name, a root disk under a hash of the image's tree. The
kernel comes from Debian's package, downloaded and unpacked into golem's own directory
(``apt-get download`` and ``dpkg-deb -x``), never installed into the host's /boot.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

from golem.core.config import MicroVMBackendConfig
from golem.core.errors import BackendUnavailable, ImageNotFound, InvalidRequest, SandboxError
from golem.core.spec import BOX_PATH, BoxSpec
from golem.sandbox.backends.microvm.cpio import Entry, cpio_archive, directory, regular
from golem.sandbox.backends.microvm.qemu import box_parameters
from golem.sandbox.backends.process.seccomp import compile_filter
from golem.sandbox.contracts import Mount
from golem.sandbox.images import image_hash
from golem.sandbox.supervisor import supervisor_source

__all__ = [
    "MODULES",
    "GuestKernel",
    "base_initramfs",
    "box_archive",
    "fetch_kernel",
    "find_kernel",
    "root_disk",
]

MODULES = (
    "virtio_ring",
    "virtio",
    "virtio_pci_legacy_dev",
    "virtio_pci_modern_dev",
    "virtio_pci",
    "virtio_blk",
    "virtio_console",
)
"""The cloud kernel builds virtio as modules: the initramfs loads these, in this order."""
ENGINE_MODULES = ("overlay", "bridge", "veth", "nft_chain_nat", "nft_nat", "nft_compat", "xt_nat")
"""What a box's container engine needs beyond them, loaded only in a box with containers,
after what each depends on (its ``depends=``): overlayfs for dockerd's overlay2; a bridge
and veth pairs for a compose project's network; nf_tables' NAT, for the rules of the DNS
server dockerd answers in each container's own network namespace (service names). A
kernel that builds one in has no file for it."""
RECIPE = 1
"""Bump when the way root disks are made changes."""
BUSYBOX = Path("/bin/busybox")
PT_INTERP = 3
SHM_SIZE = 64 * 1024**2
RUN_SIZE = 1024**2
ENGINE_RUN_SIZE = 64 * 1024**2
"""/run of a box with containers also holds dockerd's and containerd's runtime state."""
MAX_MOUNT_BYTES = 16 * 1024**2
"""Most bytes of the host's files copied into a guest (the egress proxy's CA bundle)."""
MIN_DISK = 64 * 1024**2
DISK_SLACK = 1.25
INODE_BYTES = 256


@dataclass(frozen=True)
class GuestKernel:
    """A guest kernel and its virtio modules."""

    image: Path
    release: str
    modules: tuple[Path, ...]  # in MODULES' order
    engine_modules: tuple[Path, ...] = ()  # those of ENGINE_MODULES the kernel has as files


def find_kernel(config: MicroVMBackendConfig) -> GuestKernel:
    """The configured kernel, or Debian's cloud kernel fetched into ``assets_dir`` (once)."""
    image = config.kernel
    if image is None:
        image = _fetched(config.assets_dir, config.kernel_package)
        if image is None:
            image = fetch_kernel(config.assets_dir, config.kernel_package)
    if not image.is_file():
        raise BackendUnavailable(
            f"guest kernel {image} (engine.backend.kernel) does not exist; name a bzImage, "
            "or leave it unset for Debian's cloud kernel"
        )
    release = image.name.removeprefix("vmlinuz-")
    tree = image.parent.parent / "lib" / "modules" / release / "kernel"
    found = {path.name.removesuffix(".ko"): path for path in tree.rglob("*.ko")}
    missing = [name for name in MODULES if name not in found]
    if missing:
        raise BackendUnavailable(
            f"the guest kernel {image} has no {', '.join(missing)} modules under {tree}; "
            "give a kernel laid out as Debian's packages are (boot/vmlinuz-R, lib/modules/R)"
        )
    engine = tuple(found[name] for name in _with_dependencies(ENGINE_MODULES, found))
    return GuestKernel(image, release, tuple(found[name] for name in MODULES), engine)


def _with_dependencies(names: tuple[str, ...], found: dict[str, Path]) -> list[str]:
    """``names`` and the modules they depend on, each after its dependencies (those the
    kernel has as files: the others are built in)."""
    ordered: list[str] = []

    def add(name: str) -> None:
        if name in ordered or name not in found:
            return
        for dependency in _depends(found[name]):
            add(dependency)
        ordered.append(name)

    for name in names:
        add(name)
    return ordered


def _depends(module: Path) -> list[str]:
    """The modules a kernel module names in its ``depends=`` (its .modinfo section)."""
    data = module.read_bytes()
    at = data.find(b"\0depends=")
    if at < 0:
        return []
    end = data.find(b"\0", at + 1)
    value = data[at + len(b"\0depends=") : end].decode("ascii", "replace")
    return [name for name in value.split(",") if name]


def _fetched(assets_dir: Path, package: str) -> Path | None:
    """The kernel fetched earlier for ``package``, if it is still there."""
    try:
        kept = json.loads((assets_dir / "kernels" / f"{package}.json").read_text())
        image = assets_dir / "kernels" / str(kept["directory"]) / str(kept["image"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return image if image.is_file() else None


def fetch_kernel(assets_dir: Path, package: str) -> Path:
    """Download Debian's kernel ``package`` (following a metapackage to its kernel) and
    unpack it under ``assets_dir/kernels``; returns its vmlinuz."""
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise BackendUnavailable(
                f"{tool} is missing: the guest kernel comes from Debian's packages; set "
                "engine.backend.kernel to a kernel of your own"
            )
    kernels = assets_dir / "kernels"
    kernels.mkdir(parents=True, exist_ok=True, mode=0o755)
    wanted = package
    for _ in range(3):  # a metapackage names the versioned package it depends on
        with tempfile.TemporaryDirectory(dir=kernels, prefix=".fetch-") as scratch:
            deb = _download(wanted, Path(scratch))
            unpacked = Path(scratch) / "tree"
            _run(["dpkg-deb", "-x", str(deb), str(unpacked)], f"unpacking {deb.name}")
            images = sorted((unpacked / "boot").glob("vmlinuz-*"))
            if images:
                target = kernels / deb.stem
                if not target.is_dir():
                    unpacked.chmod(0o755)
                    unpacked.rename(target)
                image = target / "boot" / images[0].name
                record = {"directory": deb.stem, "image": f"boot/{images[0].name}"}
                _write_atomically(kernels / f"{package}.json", json.dumps(record).encode())
                return image
            wanted = _kernel_dependency(deb)
    raise BackendUnavailable(f"Debian's package {package} holds no kernel image")


def _download(package: str, directory: Path) -> Path:
    _run(["apt-get", "download", "-q", package], f"downloading {package}", cwd=directory)
    debs = sorted(directory.glob("*.deb"))
    if not debs:
        raise BackendUnavailable(f"apt-get download {package} left no package file")
    return debs[0]


def _kernel_dependency(deb: Path) -> str:
    depends = _run(["dpkg-deb", "-f", str(deb), "Depends"], f"reading {deb.name}")
    for item in depends.split(","):
        name = item.split("(")[0].split("|")[0].strip()
        if name.startswith("linux-image-"):
            return name
    raise BackendUnavailable(f"{deb.name} is no kernel and depends on none")


def _run(argv: list[str], what: str, cwd: Path | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise BackendUnavailable(
            f"{what} failed: {tail}; run scripts/setup (or `apt-get update`), or set "
            "engine.backend.kernel"
        )
    return done.stdout


def _write_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_bytes(data)
    partial.chmod(0o644)
    partial.replace(path)


# The initramfs -------------------------------------------------------------------------


def _script(name: str) -> bytes:
    return (files(__package__) / name).read_bytes()


def base_initramfs(kernel: GuestKernel) -> bytes:
    """The initramfs every box of ``kernel`` shares (gzip): busybox, the virtio modules,
    golem's init, the supervisor's source and golem's seccomp filter (the process
    backend's, loaded in the guest by the supervisor). A box's own archive is appended to it (the
    kernel unpacks each archive that starts on a 4-byte boundary)."""
    return _base_initramfs(kernel, supervisor_source(), compile_filter())


def _dynamically_linked(elf: bytes) -> bool:
    """Whether a 64-bit ELF program names an interpreter (PT_INTERP): it needs libraries
    that the initramfs does not have."""
    if elf[:5] != b"\x7fELF\x02":
        return True
    (table,) = struct.unpack_from("<Q", elf, 0x20)
    size, count = struct.unpack_from("<HH", elf, 0x36)
    return any(
        struct.unpack_from("<I", elf, table + index * size)[0] == PT_INTERP
        for index in range(count)
    )


@cache
def _base_initramfs(kernel: GuestKernel, supervisor: str, seccomp: bytes) -> bytes:
    busybox = BUSYBOX.read_bytes() if BUSYBOX.is_file() else b""
    if not busybox or _dynamically_linked(busybox):
        raise BackendUnavailable(
            "the microvm guest needs a static busybox; run scripts/setup or "
            "`apt-get install busybox-static`"
        )
    entries: list[Entry] = [directory(name) for name in ("bin", "dev", "proc", "sys")]
    entries += [directory("golem"), directory("golem/modules"), directory("golem/mounts")]
    entries.append(regular("bin/busybox", busybox, 0o755))
    entries.append(regular("init", _script("init.sh"), 0o755))
    entries.append(regular("golem/box.sh", _script("box.sh"), 0o755))
    entries.append(regular("golem/engine.sh", _script("engine.sh"), 0o755))
    entries.append(regular("golem/supervisor.py", supervisor.encode()))
    entries.append(regular("golem/seccomp.bpf", seccomp))
    entries.append(regular("golem/modules.list", "\n".join(MODULES).encode() + b"\n"))
    for name, module in zip(MODULES, kernel.modules, strict=True):
        entries.append(regular(f"golem/modules/{name}.ko", module.read_bytes()))
    engine = [module.name.removesuffix(".ko") for module in kernel.engine_modules]
    entries.append(regular("golem/engine-modules.list", "".join(f"{n}\n" for n in engine).encode()))
    for name, module in zip(engine, kernel.engine_modules, strict=True):
        entries.append(regular(f"golem/modules/{name}.ko", module.read_bytes()))
    packed = gzip.compress(cpio_archive(entries), compresslevel=1, mtime=0)
    return packed + b"\0" * (-len(packed) % 4)  # the next archive starts 4-byte aligned


# Root disks ----------------------------------------------------------------------------


def default_image() -> Path:
    """golem's devbox root file system, as `golem image bootstrap` leaves it."""
    from golem.core.config import default_state_dir  # noqa: PLC0415 - one use

    return default_state_dir() / "images" / f"devbox-{image_hash('devbox')[:12]}"


def root_disk(image: Path, assets_dir: Path) -> Path:
    """A read-only ext4 disk of the root file system directory ``image`` (or ``image``
    itself when it is a disk file), built once per tree (its listing's hash)."""
    if image.is_file():
        return image
    if not image.is_dir():
        raise ImageNotFound(
            f"image {image} is neither a root file system directory nor a disk; "
            "`golem image bootstrap --no-docker` makes golem's devbox"
        )
    disks = assets_dir / "disks"
    disks.mkdir(parents=True, exist_ok=True, mode=0o755)
    digest, size = _tree_hash(image)
    disk = disks / f"{image.name}-{digest[:16]}.ext4"
    if not disk.is_file():
        _mkfs(image, disk, size)
    return disk


def _tree_hash(root: Path) -> tuple[str, int]:
    """A hash of every entry's path, kind, mode, owner, size and mtime, and the bytes the
    tree needs on an ext4 disk (roughly)."""
    digest = hashlib.sha256(f"golem-root-disk {RECIPE}\n".encode())
    needed = 0
    for directory_path, subdirectories, names in os.walk(root):
        subdirectories.sort()
        for name in sorted([*subdirectories, *names]):
            path = os.path.join(directory_path, name)
            info = os.lstat(path)
            line = (
                f"{os.path.relpath(path, root)}\0{info.st_mode}\0{info.st_uid}\0{info.st_gid}"
                f"\0{info.st_size}\0{info.st_mtime_ns}\n"
            )
            digest.update(line.encode(errors="surrogateescape"))
            needed += (info.st_size + 4095) // 4096 * 4096 + INODE_BYTES
    return digest.hexdigest(), needed


def _mkfs(image: Path, disk: Path, needed: int) -> None:
    mkfs = shutil.which("mkfs.ext4") or "/usr/sbin/mkfs.ext4"
    size = max(MIN_DISK, int(needed * DISK_SLACK))
    partial = disk.with_name(f".{disk.name}.{os.getpid()}")
    try:
        for _ in range(3):
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
            argv = [mkfs, "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-m", "0"]
            argv += ["-L", "golem-root", "-d", str(image), str(partial), str(size // 1024) + "k"]
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode == 0:
                partial.chmod(0o644)
                partial.replace(disk)
                return
            if "No space left" not in done.stderr and "Could not allocate" not in done.stderr:
                raise SandboxError(f"mkfs.ext4 could not build {disk.name}: {done.stderr.strip()}")
            size *= 2
        raise SandboxError(f"the root disk of {image} does not fit in {size} bytes")
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


# A box's own archive ----------------------------------------------------------------


def box_archive(
    spec: BoxSpec, magic: str, mounts: Sequence[Mount], *, python: str, seccomp: bool
) -> tuple[bytes, list[tuple[str, Path]]]:
    """The box's own initramfs archive (its parameters and the files of ``mounts``), and
    the sockets in ``mounts``: each becomes a port (its name, its socket on the host)."""
    uid, gid = spec.uid_gid
    params = {
        "BOX_UID": uid,
        "BOX_GID": gid,
        "WORKSPACE_SIZE": spec.workspace_size,
        "TMP_SIZE": spec.tmp_size,
        "SHM_SIZE": SHM_SIZE,
        "PIDS": spec.pids or "max",
        "MEMORY": spec.memory or "max",
        "PYTHON": python,
        "BOX_PATH": BOX_PATH,
        "PROBE": 0,
        "MAGIC": magic,
        "SECCOMP": int(seccomp),
        "CONTAINERS": int(spec.containers),
        "RUN_SIZE": ENGINE_RUN_SIZE if spec.containers else RUN_SIZE,
    }
    entries: list[Entry] = []
    lines: list[str] = []
    sockets: list[tuple[str, Path]] = []
    size = 0
    for number, mount in enumerate(mounts, start=1):
        if "\n" in mount.target or not mount.target.startswith("/"):
            raise InvalidRequest(f"cannot mount at {mount.target!r} in a microVM")
        if mount.source.is_file():
            data = mount.source.read_bytes()
            entries.append(regular(f"golem/mounts/{number}", data))
            lines.append(f"file {number} {mount.target}")
            size += len(data)
            continue
        entries.append(directory(f"golem/mounts/{number}"))
        lines.append(f"dir {number} {mount.target}")
        for item in sorted(mount.source.iterdir()):
            mode = item.lstat().st_mode
            if stat.S_ISSOCK(mode):
                port = f"golem.{len(sockets) + 1}"
                sockets.append((port, item))
                lines.append(f"socket {port.removeprefix('golem.')} {mount.target}/{item.name}")
            elif stat.S_ISREG(mode):
                data = item.read_bytes()
                entries.append(regular(f"golem/mounts/{number}/{item.name}", data))
                size += len(data)
        if size > MAX_MOUNT_BYTES:
            raise InvalidRequest(f"the files mounted into a microVM exceed {MAX_MOUNT_BYTES} bytes")
    entries.append(regular("golem/params", box_parameters(params)))
    entries.append(regular("golem/mounts.list", "".join(f"{line}\n" for line in lines).encode()))
    return cpio_archive(entries), sockets
