"""`golem run --submit`: the run queued on the golem server of ``[remote] url`` and followed
here, its events printed as they happen, its report and exit code as a local run's; Ctrl-C
cancels it on the server.

The request is sent before the run's renderer is imported: the server starts the run while
this process loads what prints it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from golem.core.console import markup, terminal
from golem.core.errors import GolemError, RemoteError
from golem.core.imports import collector_paused
from golem.sandbox import ServerConnection, server_of

if TYPE_CHECKING:
    from golem.blueprint import RunState
    from golem.core.config import GolemConfig

__all__ = ["run_on_server"]


def run_on_server(config: GolemConfig, fields: dict[str, object]) -> RunState:
    """Queue a run of ``fields`` (a RunRequest's) on the server and follow it to its end."""
    url, key = server_of(config)
    run = _Followed(url, key, config.remote.timeout)
    try:
        state = asyncio.run(run.submit_and_follow(fields))
    except KeyboardInterrupt:
        if run.run_id is None:
            raise
        run.console.print(f"golem: cancelling run {run.run_id} on {url}", highlight=False)
        state = asyncio.run(run.cancel_and_follow())
    from golem.cli.run_progress import print_report  # noqa: PLC0415 - loaded by now

    print_report(terminal(), state)
    return state


class _Followed:
    """A run on a server, followed from here: its id once queued, the last event seen."""

    def __init__(self, url: str, key: str, timeout: float) -> None:
        self.url, self.key, self.timeout = url, key, timeout
        self.console = terminal(stderr=True)
        self.run_id: str | None = None
        self.seen = 0

    async def submit_and_follow(self, fields: dict[str, object]) -> RunState:
        async with self._server() as server:
            sent = {name: value for name, value in fields.items() if value is not None}
            answer = await server.request("POST", "/v1/runs", json=sent)
            self.run_id = str(answer.json()["id"])
            self.console.print(
                markup("[dim]queued on {} as run {}[/]", self.url, self.run_id), highlight=False
            )
            return await self._follow(server)

    async def cancel_and_follow(self) -> RunState:
        async with self._server() as server:
            await server.request("POST", f"/v1/runs/{self.run_id}/cancel")
            return await self._follow(server)

    async def _follow(self, server: ServerConnection) -> RunState:
        """The run's events from the last one seen to its end, printed; its final state."""
        with collector_paused():
            from golem.blueprint import RunState, parse_run_event  # noqa: PLC0415
            from golem.cli.run_progress import RunProgress  # noqa: PLC0415
        progress = RunProgress(self.console)
        path = f"/v1/runs/{self.run_id}"
        try:
            async for message in server.follow(f"{path}/events", after=self.seen):
                progress(parse_run_event(message.data))
                self.seen = int(message.id)
            return RunState.model_validate_json((await server.request("GET", path)).content)
        except GolemError as exc:
            raise RemoteError(
                getattr(exc, "http_status", 503),
                f"{exc.message}. Run {self.run_id} is the server's and goes on there; follow "
                f"it with GET {self.url}{path}/events?after={self.seen}",
            ) from exc

    @contextlib.asynccontextmanager
    async def _server(self) -> AsyncIterator[ServerConnection]:
        server = ServerConnection(self.url, self.key, timeout=self.timeout)
        try:
            yield server
        finally:
            await server.close()
