"""File transfer: uploads (``put``, raw or tar) and flow-controlled downloads (``get``)."""

from __future__ import annotations

import os
import stat
import threading

from .framing import CHUNK, CHUNK_OP, END, ERROR, META

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tarfile
    from typing import Any

    from .channel import Channel


class NotRegularFile(ValueError):
    """A download asked for a device, FIFO or socket (``path`` in the error frame)."""


class TransferCancelled(Exception):
    """The host stopped reading a download (``cancel``): send no more of it."""


class Upload:
    """A put in progress: chunks from the host written to a file or a tar extractor."""

    def __init__(self, msg: dict[str, Any]) -> None:
        self.path = str(msg["path"])
        self.format = msg.get("format", "raw")
        self.error: str | None = None
        self.thread: threading.Thread | None = None
        parent = self.path if self.format == "tar" else os.path.dirname(self.path)
        os.makedirs(parent or "/", exist_ok=True)
        if self.format == "raw":
            mode = msg.get("mode")
            mode = 0o644 if mode is None else int(mode)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        else:
            read_fd, self.fd = os.pipe()
            self.thread = threading.Thread(target=self._extract, args=(read_fd,), daemon=True)
            self.thread.start()

    def _extract(self, read_fd: int) -> None:
        import tarfile

        with os.fdopen(read_fd, "rb") as source:
            try:
                with tarfile.open(fileobj=source, mode="r|*") as archive:
                    # The host's tree as it is: its links (absolute ones too) are data
                    # here; the tar filter still keeps every entry inside self.path.
                    if hasattr(tarfile, "tar_filter"):
                        archive.extractall(self.path, filter="tar")
                    else:  # pragma: no cover - Python < 3.8.17 in the image
                        archive.extractall(self.path)
            except Exception as exc:
                self.error = str(exc)
            while source.read(CHUNK):  # keep the writer from blocking after an error
                pass

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def finish(self) -> None:
        os.close(self.fd)
        if self.thread is not None:
            self.thread.join()
        if self.error:
            raise ValueError(self.error)


class Flow:
    """A download's credit: the host grants chunks (``window``, then ``credit``) as it
    consumes them, so a box can never send faster than the host takes in."""

    def __init__(self, window: int | None) -> None:
        self.credits = window  # None: unlimited
        self.cancelled = False
        self.cond = threading.Condition()

    def take(self) -> None:
        with self.cond:
            while self.credits is not None and self.credits <= 0 and not self.cancelled:
                self.cond.wait()
            if self.cancelled:
                raise TransferCancelled()
            if self.credits is not None:
                self.credits -= 1

    def give(self, count: int) -> None:
        with self.cond:
            if self.credits is not None:
                self.credits += count
            self.cond.notify_all()

    def cancel(self) -> None:
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()


class Download:
    """A get in progress, on a thread of its own: ``meta``, ``chunk``s, then ``end``."""

    def __init__(self, channel: Channel, msg: dict[str, Any]) -> None:
        self.channel = channel
        self.id = msg["id"]
        self.msg = msg
        window = msg.get("window")
        self.flow = Flow(int(window) if window is not None else None)
        self.pending = bytearray()

    def run(self) -> None:
        """Send the file or tree, or the error that stopped it (not once cancelled)."""
        msg = self.msg
        path = str(msg["path"])
        try:
            if msg.get("format", "raw") == "raw":
                self._send_file(path)
            else:
                skip_git = {str(d).strip("/") for d in msg.get("skip_git") or ()}
                self._send_tar(path, msg.get("paths"), skip_git)
            self.channel.send({"op": END, "id": self.id})
        except TransferCancelled:
            pass
        except Exception as exc:
            kind = type(exc).__name__
            self.channel.send(
                {"op": ERROR, "id": self.id, "kind": kind, "message": str(exc), "path": path}
            )

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
        # O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files go out.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotRegularFile(path)
            os.set_blocking(fd, True)
            self.channel.send({"op": META, "id": self.id, "size": info.st_size})
            while True:
                data = handle.read(CHUNK)
                if not data:
                    break
                self.send_chunk(data)

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
