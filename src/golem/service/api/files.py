"""A session's files over HTTP: a file or a tar archive streamed into the box or out of
it. A download's first chunk is read before the answer starts, so that a missing path is a
4xx problem rather than a broken 200."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from golem.sandbox import BoxPath
from golem.service.api.deps import Caller, State
from golem.service.api.sessions import session_box

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["sessions"])


@router.put("/sessions/{session_id}/files", status_code=status.HTTP_204_NO_CONTENT)
async def put_file(
    session_id: str,
    request: Request,
    principal: Caller,
    state: State,
    path: Annotated[BoxPath, Query(min_length=1)],
    mode: Annotated[int, Query(ge=0, le=0o7777)] = 0o644,
) -> None:
    """Write the request body to a file in the box."""
    await session_box(state, principal, session_id).put_file(path, request.stream(), mode)


@router.get(
    "/sessions/{session_id}/files",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/octet-stream": {}}}},
)
async def get_file(
    session_id: str, principal: Caller, state: State, path: Annotated[BoxPath, Query(min_length=1)]
) -> StreamingResponse:
    """A file of the box, streamed."""
    chunks = session_box(state, principal, session_id).stream_file(path)
    return await _streamed(chunks, "application/octet-stream")


async def _streamed(chunks: AsyncIterator[bytes], media_type: str) -> StreamingResponse:
    """A streamed answer whose first chunk is read now, so that a missing path is a 4xx
    problem rather than a broken 200."""
    first = await anext(aiter(chunks), b"")
    return _Transfer(chunks, _again(first, chunks), media_type=media_type)


class _Transfer(StreamingResponse):
    """A download whose source is closed when the answer ends, however it ends: a client
    that left ends the transfer in the box at once, not when the garbage collector gets to
    it."""

    def __init__(
        self, source: AsyncIterator[bytes], body: AsyncIterator[bytes], media_type: str
    ) -> None:
        super().__init__(body, media_type=media_type)
        self._source = source

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if isinstance(self._source, AsyncGenerator):
                with contextlib.suppress(RuntimeError):  # still running: it ends itself
                    await self._source.aclose()


async def _again(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if first:
        yield first
    async for chunk in rest:
        yield chunk


@router.put("/sessions/{session_id}/archive", status_code=status.HTTP_204_NO_CONTENT)
async def put_archive(
    session_id: str,
    request: Request,
    principal: Caller,
    state: State,
    path: Annotated[BoxPath, Query(min_length=1)],
) -> None:
    """Unpack the request body (a tar stream) into a directory of the box."""
    await session_box(state, principal, session_id).put_archive(path, request.stream())


@router.get(
    "/sessions/{session_id}/archive",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-tar": {}}}},
)
async def get_archive(
    session_id: str,
    principal: Caller,
    state: State,
    path: Annotated[BoxPath, Query(min_length=1)],
    paths: Annotated[list[BoxPath] | None, Query()] = None,
    skip_git: Annotated[list[BoxPath] | None, Query()] = None,
) -> StreamingResponse:
    """A directory of the box as a tar stream: only ``paths`` of it (relative), when
    given; the ``.git`` of each directory in ``skip_git`` ("" for ``path``) left out."""
    box = session_box(state, principal, session_id)
    chunks = box.stream_archive(path, paths=paths, skip_git=skip_git or ())
    return await _streamed(chunks, "application/x-tar")
