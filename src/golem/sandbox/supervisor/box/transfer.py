"""File transfer: uploads (``put``, raw or tar) and flow-controlled downloads (``get``)."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import threading

from .calls import Invalid
from .framing import CHUNK, CHUNK_OP, END, META

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tarfile
    from typing import Any

    from .channel import Channel


class NotRegularFile(ValueError):
    """A download asked for a device, FIFO or socket (``path`` in the error frame)."""


class LongerThanItsSize(ValueError):
    """A download's file holds more than its size says: a /proc or /sys file, or one still
    being written (``path`` in the error frame)."""


class TransferCancelled(Exception):
    """The host stopped reading a download (``cancel``), or the box was reset: send no
    more of it."""


def checked_path(msg: dict[str, Any]) -> str:
    """A transfer's path, refused before any system call when it holds a NUL byte."""
    path = str(msg["path"])
    if "\0" in path:
        raise Invalid(f"a path may not hold a NUL byte: {path!r}")
    return path


class Upload:
    """A put in progress: chunks from the host written aside (a temporary file beside the
    target, or a temporary directory inside it for a tar) and moved into place only by
    ``finish``, once the whole body arrived; ``abort`` removes what was written."""

    def __init__(self, msg: dict[str, Any]) -> None:
        self.path = checked_path(msg)
        self.format = msg.get("format", "raw")
        self.error: BaseException | None = None
        self.failed = False
        self.thread: threading.Thread | None = None
        self.fd = -1
        self.made: list[str] = []
        if self.format == "raw":
            self.target = os.path.realpath(self.path)  # a link is written through
            if self.path.endswith("/") or os.path.isdir(self.target):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", self.path)
            if os.path.lexists(self.target) and not os.path.isfile(self.target):
                raise Invalid(
                    f"{self.path} is not a regular file (a device, FIFO or socket): an "
                    "upload writes a regular file; give another path"
                )
            parent = os.path.dirname(self.target)
            self.made = made_directories(parent or "/")
            mode = msg.get("mode")
            mode = 0o644 if mode is None else int(mode)
            # Not named after the target: a name of NAME_MAX bytes must fit too.
            self.temp = os.path.join(parent, f".golem-upload-{os.urandom(6).hex()}")
            self.fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            if os.path.isfile(self.target):  # as writing over it did: its mode is kept
                os.fchmod(self.fd, stat.S_IMODE(os.stat(self.target).st_mode))
        else:
            self.made = made_directories(self.path)
            self.temp = tempfile.mkdtemp(prefix=".golem-upload-", dir=self.path)
            read_fd, self.fd = os.pipe()
            self.thread = threading.Thread(target=self._extract, args=(read_fd,), daemon=True)
            self.thread.start()

    def _extract(self, read_fd: int) -> None:
        import tarfile

        with os.fdopen(read_fd, "rb") as source:
            try:
                with tarfile.open(fileobj=source, mode="r|*") as archive:
                    # The host's tree as it is: its links (absolute ones too) are data
                    # here; the tar filter still keeps every entry inside the directory.
                    if hasattr(tarfile, "tar_filter"):
                        archive.extractall(self.temp, filter="tar")
                    else:  # pragma: no cover - Python < 3.8.17 in the image
                        archive.extractall(self.temp)
            except tarfile.TarError as exc:
                self.error = Invalid(
                    f"the upload to {self.path} is not a tar archive that can be unpacked "
                    f"({exc}); send an uncompressed, gzip, bz2 or xz tar stream"
                )
            except Exception as exc:
                self.error = exc
            while source.read(CHUNK):  # keep the writer from blocking after an error
                pass

    def write(self, data: bytes) -> None:
        """Write a chunk; after a failed one (a full disk), the rest are dropped."""
        if self.failed:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self.failed = True
            self.abort()
            raise OSError(exc.errno, exc.strerror, self.path) from None

    def finish(self) -> None:
        """The whole body arrived: move it into place (or raise why it cannot be)."""
        try:
            self._close()
            if self.error is not None:
                raise self.error
            if self.format == "raw":
                os.rename(self.temp, self.target)
            else:
                merge(self.temp, self.path)
        except BaseException:
            self.abort()
            raise
        self._discard()

    def abort(self) -> None:
        """The body will not arrive whole: remove what was written of it, and the
        directories made for it (those still empty)."""
        self._close()
        self._discard()
        for directory in self.made:
            try:
                os.rmdir(directory)
            except OSError:
                break

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.thread is not None:
            self.thread.join()

    def _discard(self) -> None:
        if os.path.isdir(self.temp) and not os.path.islink(self.temp):
            shutil.rmtree(self.temp, ignore_errors=True)
        else:
            try:
                os.unlink(self.temp)
            except OSError:
                pass


def made_directories(path: str) -> list[str]:
    """Make ``path`` and its missing parents; those it made, deepest first."""
    missing: list[str] = []
    where = os.path.abspath(path)
    while not os.path.lexists(where):
        missing.append(where)
        where = os.path.dirname(where)
    os.makedirs(path, exist_ok=True)
    return missing


def merge(source: str, target: str) -> None:
    """Move the tree ``source`` into the directory ``target``: directories merged with
    those there, anything else replacing what is there (a link itself, not its target)."""
    for name in sorted(os.listdir(source)):
        moved, there = os.path.join(source, name), os.path.join(target, name)
        is_dir = os.path.isdir(moved) and not os.path.islink(moved)
        if is_dir and os.path.isdir(there) and not os.path.islink(there):
            merge(moved, there)
            shutil.copystat(moved, there, follow_symlinks=False)
            os.rmdir(moved)
            continue
        if is_dir and os.path.lexists(there):
            os.unlink(there)  # a file or link where the archive has a directory
        try:
            os.replace(moved, there)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            shutil.move(moved, there)  # a mount point inside the target


class Flow:
    """A download's credit: the host grants chunks (``window``, then ``credit``) as it
    consumes them, so a box can never send faster than the host takes in."""

    def __init__(self, window: int | None) -> None:
        self.credits = window  # None: unlimited
        self.cancelled = ""  # why, once cancelled
        self.cond = threading.Condition()

    def take(self) -> None:
        with self.cond:
            while self.credits is not None and self.credits <= 0 and not self.cancelled:
                self.cond.wait()
            if self.cancelled:
                raise TransferCancelled(self.cancelled)
            if self.credits is not None:
                self.credits -= 1

    def give(self, count: int) -> None:
        with self.cond:
            if self.credits is not None:
                self.credits += count
            self.cond.notify_all()

    def cancel(self, why: str) -> None:
        with self.cond:
            self.cancelled = why
            self.cond.notify_all()


class Download:
    """A get in progress, on a thread of its own: ``meta``, ``chunk``s, then ``end``."""

    def __init__(self, channel: Channel, msg: dict[str, Any]) -> None:
        self.channel = channel
        self.id = msg["id"]
        self.msg = msg
        window = msg.get("window")
        self.flow = Flow(int(window) if window is not None else None)
        self.thread: threading.Thread | None = None
        self.pending = bytearray()

    def run(self) -> None:
        """Send the file or tree, or the error that stopped it (to a host that cancelled
        it, a frame it drops)."""
        msg = self.msg
        path = str(msg["path"])
        try:
            checked_path(msg)
            if msg.get("format", "raw") == "raw":
                self._send_file(path)
            else:
                skip_git = {str(d).strip("/") for d in msg.get("skip_git") or ()}
                self._send_tar(path, msg.get("paths"), skip_git)
            self.channel.send({"op": END, "id": self.id})
        except Exception as exc:
            self.channel.send_error(self.id, exc, path)

    def send_chunk(self, data: bytes) -> None:
        self.flow.take()
        self.channel.send({"op": CHUNK_OP, "id": self.id}, data)

    def write(self, data: bytes) -> int:
        """File-like sink for tarfile: buffered into chunks of CHUNK bytes."""
        self.pending += data
        if len(self.pending) >= CHUNK:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self.pending:
            self.send_chunk(bytes(self.pending))
            self.pending = bytearray()

    def _send_file(self, path: str) -> None:
        """A regular file, read as its size says: a device, FIFO or socket (looked at
        before it is opened: opening a socket fails, a FIFO would wait for a writer) and a
        file holding more than its size (a /proc or /sys file) are refused."""
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise NotRegularFile(path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotRegularFile(path)
            os.set_blocking(fd, True)
            left = info.st_size
            data = handle.read(min(CHUNK, left)) if left else handle.read(1)
            if not left and data:
                raise LongerThanItsSize(path)
            self.channel.send({"op": META, "id": self.id, "size": info.st_size})
            while left > 0 and data:
                self.send_chunk(data)
                left -= len(data)
                data = handle.read(min(CHUNK, left)) if left > 0 else b""
            if handle.read(1):
                raise LongerThanItsSize(path)

    def _send_tar(self, path: str, paths: list[str] | None, skip_git: set[str]) -> None:
        """``path`` as a tar stream; with ``paths`` (relative to it), only those that exist
        (directories with all they hold), each once; the ``.git`` of each directory in
        ``skip_git`` ("" is ``path`` itself) left out."""
        import tarfile

        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        self.channel.send({"op": META, "id": self.id})

        def entry(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            """Each file whole (a second hard link to it too), skipped .git left out."""
            name = info.name[2:] if info.name.startswith("./") else info.name
            names = name.split("/")
            for index, part in enumerate(names):
                if part == ".git" and "/".join(names[:index]) in skip_git:
                    return None
            if info.islnk():
                info.type, info.linkname = tarfile.REGTYPE, ""
                info.size = os.lstat(os.path.join(path, name)).st_size
            return info

        with tarfile.open(fileobj=self, mode="w|", format=tarfile.PAX_FORMAT) as archive:  # type: ignore[call-overload]
            if paths is None:
                archive.add(path, arcname=".", filter=entry)
            else:
                added: list[str] = []
                for name in sorted({str(p).strip("/") for p in paths}):
                    if not name or any(name.startswith(d + "/") for d in added):
                        continue
                    full = os.path.join(path, name)
                    if os.path.lexists(full):
                        archive.add(full, arcname=name, filter=entry)
                        if os.path.isdir(full) and not os.path.islink(full):
                            added.append(name)
        self.flush()
