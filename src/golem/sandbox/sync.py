"""Thin synchronous wrappers for scripts: the async engine on a private event-loop thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from golem.core.config import GolemConfig
from golem.core.spec import BoxSpec
from golem.sandbox.contracts import Box, Engine
from golem.sandbox.models import ExecRequest, ExecResult

__all__ = ["SyncBox", "SyncEngine"]

T = TypeVar("T")


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class SyncBox:
    """Blocking view of a Box."""

    def __init__(self, box: Box, runner: _LoopThread) -> None:
        self._box = box
        self._run = runner.run
        self.id = box.id

    def execute(self, request: ExecRequest | str | Sequence[str]) -> ExecResult:
        """See Box.execute."""
        return self._run(self._box.execute(request))

    def put_file(self, path: str, source: bytes | str | Path, mode: int = 0o644) -> None:
        """See Box.put_file."""
        self._run(self._box.put_file(path, source, mode))

    def get_file(self, path: str) -> bytes:
        """See Box.get_file."""
        return self._run(self._box.get_file(path))

    def put_dir(self, source: Path, path: str) -> None:
        """See Box.put_dir."""
        self._run(self._box.put_dir(source, path))

    def get_dir(self, path: str, destination: Path) -> None:
        """See Box.get_dir."""
        self._run(self._box.get_dir(path, destination))


class SyncEngine:
    """Blocking view of an Engine: ``with SyncEngine() as engine: engine.execute("ls")``;
    the engine ``make_engine`` gives (a server's when ``[remote] url`` is set).

    The engine and its boxes live on a private event loop thread; the process-backend
    boxes die with that thread's process, as with the async engine.
    """

    def __init__(self, config: GolemConfig | None = None) -> None:
        self._runner = _LoopThread()
        self._engine = self._runner.run(_make_engine(config))

    def __enter__(self) -> SyncEngine:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def execute(
        self,
        request: ExecRequest | str | Sequence[str],
        spec: BoxSpec | Mapping[str, Any] | None = None,
    ) -> ExecResult:
        """Run one call in a fresh box."""
        return self._runner.run(self._engine.execute(request, spec))

    @contextmanager
    def session(self, spec: BoxSpec | Mapping[str, Any] | None = None) -> Iterator[SyncBox]:
        """One box for many calls."""
        box = self._runner.run(self._engine.create_session(spec))
        try:
            yield SyncBox(box, self._runner)
        finally:
            self._runner.run(self._engine.remove_session(box.id))

    def close(self) -> None:
        """Stop every box and the loop thread."""
        self._runner.run(self._engine.close())
        self._runner.stop()


async def _make_engine(config: GolemConfig | None) -> Engine:
    """The engine every command would use (``make_engine``): a server's when ``[remote]
    url`` is set, made on the loop thread that will use it."""
    from golem.sandbox.choice import make_engine  # noqa: PLC0415

    return make_engine(config)
