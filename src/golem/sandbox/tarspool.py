"""A box's tar stream on the host: spooled to disk as it arrives (capped, its headers
followed by ``HeaderScan``, its runs of zeros left as holes), then read by tarfile in
random-access mode behind a reader that refuses any one read over a megabyte, so no header
can make the host hold a large buffer; and what tarfile raises on bytes that are no
archive, translated (``takeback.kind``)."""

from __future__ import annotations

import contextlib
import functools
import tarfile
import tempfile
import threading
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterator
from typing import IO

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size
from golem.sandbox.holes import SparseWriter
from golem.sandbox.landing import in_thread
from golem.sandbox.limits import TakebackLimits
from golem.sandbox.tarscan import HeaderScan

__all__ = ["BROKEN", "ArchiveData", "archive_members", "opened_archive", "spooled"]

MAX_READ = 1024 * 1024  # the largest single read tarfile may make (a pax or long-name header)
ARCHIVE_SLACK = 64 * 1024 * 1024  # tar headers and padding beyond the data itself
BROKEN = (tarfile.TarError, UnicodeError, ValueError, IndexError, RecursionError, EOFError)
"""What tarfile raises on an archive it cannot read (a box may send any bytes)."""


@contextlib.asynccontextmanager
async def spooled(
    chunks: AsyncIterable[bytes], limits: TakebackLimits, directory: str | None
) -> AsyncIterator[IO[bytes]]:
    """A tar stream from a box in a temporary file in ``directory`` (its zeros as holes),
    rewound: refused past ``limits.max_bytes`` (and its headers checked, ``HeaderScan``) as
    it comes."""
    cap = limits.max_bytes + ARCHIVE_SLACK
    with tempfile.TemporaryFile(prefix=".golem-spool-", dir=directory) as spool:
        writer = SparseWriter(spool.fileno())
        scan = HeaderScan(limits.max_file_bytes, limits.file_limit())

        def take(chunk: bytes, _: threading.Event) -> None:  # never blocks the event loop
            scan.feed(chunk)
            writer.write(chunk)

        try:
            async for chunk in chunks:
                if writer.tell() + len(chunk) > cap:
                    raise UnsafeBoxOutput(
                        "(the archive)",
                        f"the box sent more than {format_size(cap)}, over "
                        f"{limits.transfer_limit()} and room for tar's headers",
                        "takeback.size",
                    )
                await in_thread(functools.partial(take, chunk))
        finally:  # a transfer refused midway ends now in the box, not when collected
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()
        writer.finish()
        spool.seek(0)
        yield spool


class _CappedReader:
    """A seekable file for tarfile that refuses a read larger than ``MAX_READ``."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner = inner

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > MAX_READ:
            raise UnsafeBoxOutput(
                "(the archive)",
                "a tar header asks for more than a megabyte at once",
                "takeback.size",
            )
        return self._inner.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._inner.seek(offset, whence)

    def tell(self) -> int:
        return self._inner.tell()


class ArchiveData:
    """``size`` bytes of the spooled archive from ``offset`` (a file entry's data)."""

    def __init__(self, spool: IO[bytes], offset: int, size: int) -> None:
        self._spool = spool
        self._position = offset
        self._end = offset + size

    def read(self, size: int) -> bytes:
        self._spool.seek(self._position)
        data = self._spool.read(min(size, self._end - self._position))
        self._position += len(data)
        return data

    def __enter__(self) -> ArchiveData:
        return self

    def __exit__(self, *_: object) -> None:
        pass


@contextlib.contextmanager
def opened_archive(spool: IO[bytes]) -> Iterator[tarfile.TarFile]:
    """The spooled archive, read through ``_CappedReader``."""
    try:
        archive = tarfile.TarFile(fileobj=_CappedReader(spool), mode="r")  # type: ignore[arg-type]
    except BROKEN as exc:
        raise UnsafeBoxOutput(
            "(the archive)", f"not a tar archive ({exc})", "takeback.kind"
        ) from None
    with archive:
        yield archive


def archive_members(archive: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The archive's entries, its format errors translated."""
    while True:
        try:
            member = archive.next()
        except BROKEN as exc:
            raise UnsafeBoxOutput(
                "(the archive)", f"a broken tar entry ({exc})", "takeback.kind"
            ) from None
        if member is None:
            return
        yield member
