"""File transfer into and out of a box, streamed in chunks (never whole files in memory).

Single files travel raw; directories as tar streams. A tar that comes out of a box is
untrusted and is extracted on the host with the ``data`` filter (no links out, no devices,
no absolute paths).
"""

from __future__ import annotations

import asyncio
import tarfile
import tempfile
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import IO, Any

from golem.core.errors import BoxCrashed, SandboxError
from golem.core.spec import WORKSPACE
from golem.sandbox.supervisor import Frame, SessionClient
from golem.sandbox.supervisor.client import raise_if_error

__all__ = ["BoxFiles", "chunks_of", "extract_tar", "write_tar"]

CHUNK = 256 * 1024
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


class BoxFiles:
    """put/get of files and directories through a box's supervisor."""

    def __init__(self, client: SessionClient, workdir: str = WORKSPACE) -> None:
        self._files_client = client
        self._workdir = workdir

    async def put_file(
        self, path: str, source: bytes | str | Path | AsyncIterable[bytes], mode: int = 0o644
    ) -> None:
        """Write ``source`` (bytes, text, a host file or an async byte stream) to ``path``."""
        await self._upload(
            {"op": "put", "path": box_path(path, self._workdir), "format": "raw", "mode": mode},
            chunks_of(source),
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
        """A file's content in chunks as it arrives."""
        async for chunk in self._download(
            {"op": "get", "path": box_path(path, self._workdir), "format": "raw"}
        ):
            yield chunk

    async def put_dir(self, source: Path, path: str) -> None:
        """Copy a host directory's content into ``path`` in the box."""
        if not source.is_dir():
            raise SandboxError(f"{source} is not a directory")
        with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY) as spool:
            await asyncio.to_thread(write_tar, source, spool)
            spool.seek(0)
            await self.put_archive(path, _read_spool(spool))

    async def put_archive(self, path: str, chunks: AsyncIterable[bytes]) -> None:
        """Unpack a tar stream into the directory ``path`` of the box (the box extracts it
        with tarfile's ``data`` filter: no links out, no devices, no absolute paths)."""
        await self._upload(
            {"op": "put", "path": box_path(path, self._workdir), "format": "tar"},
            chunks_of(chunks),
        )

    async def stream_archive(self, path: str) -> AsyncIterator[bytes]:
        """A directory of the box as a tar stream, in chunks as it arrives."""
        async for chunk in self._download(
            {"op": "get", "path": box_path(path, self._workdir), "format": "tar"}
        ):
            yield chunk

    async def get_dir(self, path: str, destination: Path) -> None:
        """Copy a directory of the box into ``destination`` on the host."""
        destination.mkdir(parents=True, exist_ok=True)
        with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY) as spool:
            async for chunk in self.stream_archive(path):
                await asyncio.to_thread(spool.write, chunk)
            spool.seek(0)
            await asyncio.to_thread(extract_tar, spool, destination)

    async def _upload(self, message: dict[str, Any], chunks: AsyncIterator[bytes]) -> None:
        client = self._files_client
        call_id = message["id"] = client.new_id()
        queue = client.open(call_id)
        try:
            await client.send(message)
            async for chunk in chunks:
                if not queue.empty():  # the box refused early (bad path, no permission)
                    break
                await client.send({"op": "chunk", "id": call_id}, chunk)
            await client.send({"op": "end", "id": call_id})
            raise_if_error(await _reply(client, queue))
        finally:
            client.close_call(call_id)

    async def _download(self, message: dict[str, Any]) -> AsyncIterator[bytes]:
        client = self._files_client
        call_id = message["id"] = client.new_id()
        queue = client.open(call_id)
        try:
            await client.send(message)
            while True:
                frame = await _reply(client, queue)
                raise_if_error(frame)
                op = frame[0].get("op")
                if op == "chunk":
                    yield frame[1]
                elif op == "end":
                    return
        finally:
            client.close_call(call_id)


async def _reply(client: SessionClient, queue: asyncio.Queue[Frame | None]) -> Frame:
    frame = await queue.get()
    if frame is None:
        raise BoxCrashed(client.lost or "the box went away during a file transfer")
    return frame


async def _read_spool(spool: IO[bytes]) -> AsyncIterator[bytes]:
    while chunk := await asyncio.to_thread(spool.read, CHUNK):
        yield chunk


def write_tar(source: Path, sink: IO[bytes]) -> None:
    """A host directory's content as a tar stream."""
    with tarfile.open(fileobj=sink, mode="w|") as archive:
        for child in sorted(source.iterdir()):
            archive.add(child, arcname=child.name)


def extract_tar(spool: IO[bytes], destination: Path) -> None:
    """Unpack a tar stream that came from a box (untrusted: the ``data`` filter)."""
    try:
        with tarfile.open(fileobj=spool, mode="r|") as archive:
            archive.extractall(destination, filter="data")
    except tarfile.FilterError as exc:
        raise SandboxError(
            f"refused an unsafe entry from the box ({exc}); entries before it were copied "
            f"to {destination}"
        ) from exc
    except tarfile.TarError as exc:
        raise SandboxError(f"the box sent a broken archive: {exc}") from exc
