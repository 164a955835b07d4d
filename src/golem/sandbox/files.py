"""File transfer into and out of a box, streamed in chunks (never whole files in memory).

Single files travel raw; directories as tar streams. What comes out of a box is untrusted:
its sizes are capped by the box's spec as the bytes arrive, and a directory is landed on
the host by ``golem.sandbox.takeback`` (no .git, no link out, no device, no special mode,
nothing written through a host symlink).
"""

from __future__ import annotations

import asyncio
import contextlib
import tarfile
import tempfile
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Collection
from pathlib import Path
from typing import IO

from golem.core.errors import BoxCrashed, SandboxError, UnsafeBoxOutput
from golem.core.sizes import format_size
from golem.core.spec import WORKSPACE
from golem.sandbox.supervisor import Frame, SessionClient
from golem.sandbox.supervisor.client import raise_if_error
from golem.sandbox.supervisor.messages import (
    Chunk,
    ChunkReply,
    Credit,
    End,
    EndReply,
    Error,
    Get,
    Meta,
    Put,
)
from golem.sandbox.takeback import Landed, TakebackLimits, land_archive

__all__ = ["BoxFiles", "capped", "chunks_of", "tar_of", "write_tar"]

CHUNK = 256 * 1024
WINDOW = 64  # chunks a box may send ahead of what the host consumed (64 KiB each)
MAX_CHUNK = 256 * 1024  # a chunk's most bytes the host allows for (the box sends ~64 KiB)
SPOOL_IN_MEMORY = 8 * 1024 * 1024


def box_path(path: str, workdir: str = WORKSPACE) -> str:
    """Relative paths are relative to the box's working directory (/workspace by default)."""
    return path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"


async def chunks_of(source: bytes | str | Path | AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Bytes, text, a host file or a stream of bytes, as chunks of at most CHUNK bytes
    (a stream's chunks as they come)."""
    if isinstance(source, str):
        source = source.encode()
    if isinstance(source, bytes):
        for start in range(0, len(source), CHUNK):
            yield source[start : start + CHUNK]
    elif isinstance(source, Path):
        with source.open("rb") as handle:
            while chunk := await asyncio.to_thread(handle.read, CHUNK):
                yield chunk
    else:
        async for chunk in source:
            yield chunk


async def capped(
    chunks: AsyncIterable[bytes], path: str, limits: TakebackLimits, *, already: int = 0
) -> AsyncGenerator[bytes, None]:
    """``chunks`` from a box, refused (``takeback.size``) once they pass
    ``limits.max_file_bytes`` (counting ``already`` bytes of the same transfer), whatever
    size the box announced."""
    size = already
    async with _closing(chunks):
        async for chunk in chunks:
            size += len(chunk)
            if size > limits.max_file_bytes:
                raise UnsafeBoxOutput(
                    path, f"the box sent more than {limits.file_limit()}", "takeback.size"
                )
            yield chunk


@contextlib.asynccontextmanager
async def _closing(chunks: AsyncIterable[bytes]) -> AsyncIterator[None]:
    """Close ``chunks`` (a download) as soon as its reader stops, not when the garbage
    collector gets to it: the box's side of the transfer ends at once."""
    try:
        yield
    finally:
        if isinstance(chunks, AsyncGenerator):
            await chunks.aclose()


class BoxFiles:
    """put/get of files and directories through a box's supervisor; what comes back is
    capped by ``limits`` (the box spec's ``max_file_bytes`` and ``max_takeback_bytes``)."""

    def __init__(
        self, client: SessionClient, workdir: str = WORKSPACE, *, limits: TakebackLimits
    ) -> None:
        self._files_client = client
        self._workdir = workdir
        self.limits = limits

    async def put_file(
        self, path: str, source: bytes | str | Path | AsyncIterable[bytes], mode: int = 0o644
    ) -> None:
        """Write ``source`` (bytes, text, a host file or an async byte stream) to ``path``."""
        await self._upload(
            Put(path=box_path(path, self._workdir), format="raw", mode=mode), chunks_of(source)
        )

    async def get_file(self, path: str) -> bytes:
        """The content of a file in the box."""
        return b"".join([chunk async for chunk in self.stream_file(path)])

    async def get_file_to(self, path: str, destination: Path) -> int:
        """Copy a file out of the box to a host path, streamed; returns its size."""
        size = 0
        with destination.open("wb") as handle:
            async for chunk in self.stream_file(path):
                await asyncio.to_thread(handle.write, chunk)
                size += len(chunk)
        return size

    async def stream_file(self, path: str) -> AsyncIterator[bytes]:
        """A regular file's content in chunks as it arrives (at most ``max_file_bytes``:
        refused before any chunk when the box announces more, cut off when it sends more,
        or more than it announced)."""
        where = box_path(path, self._workdir)
        sizes: list[int] = []

        def announced(size: int) -> None:
            if size > self.limits.max_file_bytes:
                raise self.limits.file_too_large(where, size)
            sizes.append(size)

        download = self._download(Get(path=where, format="raw"), announced=announced)
        sent = 0
        async with contextlib.aclosing(capped(download, where, self.limits)) as chunks:
            async for chunk in chunks:
                sent += len(chunk)
                if sizes and sent > sizes[0]:
                    raise UnsafeBoxOutput(
                        where,
                        f"the box sent more than the {format_size(sizes[0])} it announced: "
                        "only regular files, read as their size says, are downloaded",
                        "takeback.kind",
                    )
                yield chunk

    async def put_dir(
        self, source: Path, path: str, *, leave_out: Callable[[str], bool] | None = None
    ) -> None:
        """Copy a host directory's content into ``path`` in the box, but the entries
        ``leave_out`` names (relative paths)."""
        # closed here: a copy cancelled mid-way leaves no spool file open
        async with contextlib.aclosing(tar_of(source, leave_out=leave_out)) as chunks:
            await self.put_archive(path, chunks)

    async def put_archive(self, path: str, chunks: AsyncIterable[bytes]) -> None:
        """Unpack a tar stream into the directory ``path`` of the box (the box extracts it
        with tarfile's ``tar`` filter: every entry inside ``path``, links kept as they
        are, no setuid bits)."""
        await self._upload(Put(path=box_path(path, self._workdir), format="tar"), chunks_of(chunks))

    async def stream_archive(
        self,
        path: str,
        *,
        paths: list[str] | None = None,
        skip_git: Collection[str] = (),
    ) -> AsyncIterator[bytes]:
        """A directory of the box as a tar stream, in chunks as it arrives; with ``paths``
        (relative to it), only those that exist; the ``.git`` of each directory in
        ``skip_git`` (relative; "" for ``path`` itself) left out. Untrusted: land it with
        ``golem.sandbox.takeback``."""
        message = Get(
            path=box_path(path, self._workdir),
            format="tar",
            skip_git=sorted(set(skip_git)),
            paths=paths,
        )
        download = self._download(message)
        async with _closing(download):
            async for chunk in download:
                yield chunk

    async def get_dir(self, path: str, destination: Path) -> Landed:
        """Copy a directory of the box into ``destination`` on the host, by the rules of
        ``golem.sandbox.takeback`` (a ``.git`` in it is refused, as everything else a
        host must not take from a box)."""
        return await land_archive(self.stream_archive(path), destination, self.limits)

    async def _upload(self, message: Put, chunks: AsyncIterator[bytes]) -> None:
        """Send ``chunks`` to the box, which writes them aside and moves them into place
        only at ``end``: a body that does not arrive whole (the source failed, the client
        left) is cancelled, and the box removes what it wrote of it."""
        client = self._files_client
        call_id = client.new_id()
        queue = client.open(call_id)
        ended = False
        try:
            await client.send(call_id, message)
            async for chunk in chunks:
                if not queue.empty():  # the box refused early (bad path, a full disk)
                    break
                await client.send(call_id, Chunk(), chunk)
            await client.send(call_id, End())
            ended = True
            raise_if_error(await _reply(client, queue))
        finally:
            client.close_call(call_id)
            if not ended:
                await _cancel(client, call_id)

    async def _download(
        self, message: Get, *, announced: Callable[[int], None] | None = None
    ) -> AsyncIterator[bytes]:
        """A download's chunks, granted to the box ``WINDOW`` at a time as they are consumed
        (the box can never send faster than the host takes in); ``announced`` gets the size
        the box announces for a file, before any chunk."""
        client = self._files_client
        call_id = client.new_id()
        queue = client.open(call_id, max_buffered=WINDOW * MAX_CHUNK)
        finished = False
        consumed = 0
        try:
            await client.send(call_id, message.model_copy(update={"window": WINDOW}))
            while True:
                frame = await _reply(client, queue)
                reply = frame[0]
                finished = isinstance(reply, (EndReply, Error))
                raise_if_error(frame)
                if isinstance(reply, Meta) and announced is not None and reply.size is not None:
                    announced(reply.size)
                elif isinstance(reply, ChunkReply):
                    client.consumed(call_id, len(frame[1]))
                    yield frame[1]
                    consumed += 1
                    if consumed == WINDOW // 2:
                        await client.send(call_id, Credit(count=consumed))
                        consumed = 0
                elif isinstance(reply, EndReply):
                    return
        finally:
            client.close_call(call_id)
            if not finished:  # the host stopped reading it
                await _cancel(client, call_id)


async def _cancel(client: SessionClient, call_id: str) -> None:
    """Cancel a transfer in the box, even from a task being cancelled (a client that
    left): the box must not go on with it."""
    with contextlib.suppress(SandboxError, OSError):
        await asyncio.shield(client.cancel(call_id))


async def _reply(client: SessionClient, queue: asyncio.Queue[Frame | None]) -> Frame:
    frame = await queue.get()
    if frame is None:
        raise BoxCrashed(client.lost or "the box went away during a file transfer")
    return frame


async def tar_of(
    source: Path, *, leave_out: Callable[[str], bool] | None = None
) -> AsyncGenerator[bytes, None]:
    """A host directory's content as tar chunks (spooled to disk past 8 MiB, never whole
    in memory), but the entries ``leave_out`` names."""
    if not source.is_dir():
        raise SandboxError(f"{source} is not a directory")
    with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY) as spool:
        await asyncio.to_thread(write_tar, source, spool, leave_out)
        spool.seek(0)
        while chunk := await asyncio.to_thread(spool.read, CHUNK):
            yield chunk


def write_tar(
    source: Path, sink: IO[bytes], leave_out: Callable[[str], bool] | None = None
) -> None:
    """A host directory's content as a tar stream, but the entries ``leave_out`` names."""

    def kept(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if leave_out is not None and leave_out(info.name) else info

    with tarfile.open(fileobj=sink, mode="w|") as archive:
        for child in sorted(source.iterdir()):
            archive.add(child, arcname=child.name, filter=kept)
