"""RemoteEngine: a golem server's engine, a ``golem.sandbox.Engine``.

    engine = make_engine(config)        # LocalEngine, or RemoteEngine when [remote] url is set
    async with engine, engine.session(engine.spec(memory="1g")) as box:
        result = await box.execute("pytest -q")

Errors the server answers come back as the same GolemError classes (by the problem's
``kind``), with the server's message (``golem.sandbox.remote.connection``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any

import httpx
from pydantic import TypeAdapter

from golem.core.config import GolemConfig, load_config
from golem.core.errors import RemoteError, SnapshotUnsupported
from golem.core.events import EventSink, ExecEvent
from golem.core.spec import SERVER_LABELS, BoxSpec
from golem.sandbox.box import as_request
from golem.sandbox.contracts import Request, SpecLike
from golem.sandbox.models import BoxInfo, ExecResult, SnapshotInfo
from golem.sandbox.remote.box import RemoteBox
from golem.sandbox.remote.connection import ServerConnection
from golem.sandbox.remote.frames import ProblemFrame
from golem.sandbox.sessions import BoxSessions

__all__ = ["RemoteEngine", "spec_payload"]
_EVENT: TypeAdapter[ExecEvent] = TypeAdapter(ExecEvent)


def spec_payload(spec: BoxSpec | Mapping[str, Any] | None) -> dict[str, Any]:
    """What a request asks of the server's box: the fields set, secrets in clear (they go
    to the server that runs the box, over the connection the key protects)."""
    if spec is None:
        return {}
    if isinstance(spec, BoxSpec):
        asked = spec.model_dump(mode="json", exclude_unset=True)
        if "secrets" in asked:
            asked["secrets"] = spec.secret_values()
        return asked
    return dict(spec)


class RemoteEngine(BoxSessions[RemoteBox]):
    """A golem server's engine: its sessions are the server's, for this key's tenant.

    ``server_labels``: the key may set the server's own labels (``golem.*``), as a control
    plane's key on its nodes does. Without it, a client's ``golem.*`` labels (a local run's
    ``golem.run``) mark its own things, not the server's: they are left out of what the
    server is asked, which would refuse them."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        config: GolemConfig | None = None,
        timeout: float = 600.0,
        transport: httpx.AsyncBaseTransport | None = None,
        server_labels: bool = False,
        connection: ServerConnection | None = None,
    ) -> None:
        """``connection``: the transport to the server at ``url`` with ``key``, when it is
        one of its own (a cluster node's); else a plain one."""
        self.config = config or load_config()
        self.server = connection or ServerConnection(url, key, timeout=timeout, transport=transport)
        self.server_labels = server_labels
        self._handles: dict[str, list[RemoteBox]] = {}  # to close when the session ends

    @property
    def url(self) -> str:
        """The server's URL."""
        return self.server.url

    def spec(self, spec: SpecLike = None, **overrides: Any) -> BoxSpec:
        """A BoxSpec of the fields given; the server applies its own defaults to the rest."""
        given = spec_payload(spec)
        given.update(overrides)
        return BoxSpec.model_validate(given)

    async def start(self, *, prewarm: bool = False, specs: Sequence[BoxSpec] = ()) -> None:
        """Nothing to do: the server keeps its own warm pool."""

    async def create_session(
        self, spec: SpecLike = None, *, on_event: EventSink[ExecEvent] | None = None
    ) -> RemoteBox:
        """A session on the server; ``on_event`` gets its setup script's events as they come
        (``POST /v1/sessions/stream``)."""
        body = {"spec": self._asked(spec)}
        if on_event is None:
            info = (await self.server.request("POST", "/v1/sessions", json=body)).json()
        else:
            info = await self._opened(body, on_event)
        return self._handle(info, _secrets(spec))

    def _asked(self, spec: SpecLike) -> dict[str, Any]:
        """What the server is asked for ``spec``: without ``server_labels``, none of the
        server's own labels."""
        asked = spec_payload(spec)
        labels = asked.get("labels")
        if not self.server_labels and isinstance(labels, Mapping):
            asked["labels"] = {
                k: v for k, v in labels.items() if not str(k).startswith(SERVER_LABELS)
            }
        return asked

    async def _opened(self, body: dict[str, Any], on_event: EventSink[ExecEvent]) -> Any:
        async for name, data in self.server.sse("/v1/sessions/stream", body):
            if name == "session":
                return json.loads(data)
            if name == "problem":
                raise self.server.error_of(ProblemFrame.model_validate_json(data))
            on_event(_EVENT.validate_json(data))
        raise RemoteError(502, "the server ended the session's setup stream without a session")

    def _handle(self, info: dict[str, Any], secrets: list[str]) -> RemoteBox:
        box = RemoteBox(self.server, info, secrets=secrets)
        self._handles.setdefault(box.id, []).append(box)
        return box

    async def get_session(self, box_id: str) -> RemoteBox:
        """A handle on an existing session of this key's tenant."""
        return self._handle((await self.server.request("GET", f"/v1/sessions/{box_id}")).json(), [])

    async def remove_session(self, box_id: str) -> None:
        """End a session; its handles here are closed."""
        try:
            await self.server.request("DELETE", f"/v1/sessions/{box_id}")
        finally:
            for box in self._handles.pop(box_id, []):
                await box.end()

    async def snapshot(
        self, box_id: str, name: str, *, max_tenant_bytes: int | None = None
    ) -> SnapshotInfo:
        """Freeze a session's writable trees as a snapshot of the key's tenant, kept on
        the server (within its role's ``max_snapshot_bytes`` too)."""
        body = {"name": name, "max_tenant_bytes": max_tenant_bytes}
        answer = await self.server.request("POST", f"/v1/sessions/{box_id}/snapshot", json=body)
        return SnapshotInfo.model_validate(answer.json())

    async def fork(self, box_id: str) -> RemoteBox:
        """Not through a server yet: SnapshotUnsupported, saying where forks are."""
        raise SnapshotUnsupported(
            f"session {box_id} cannot be forked through a golem serve yet: forks are this "
            "machine's engine's (LocalEngine.fork); take a snapshot of the session and start "
            "a session from it instead"
        )

    async def execute(self, request: Request, spec: SpecLike = None) -> ExecResult:
        """One call in a box of its own on the server."""
        body = {"request": _request_json(request), "spec": self._asked(spec)}
        return ExecResult.model_validate(
            (await self.server.request("POST", "/v1/exec", json=body)).json()
        )

    async def stream(
        self, request: Request, spec: SpecLike = None
    ) -> AsyncGenerator[ExecEvent, None]:
        """One call in a box of its own on the server, its events as they come."""
        body = {"request": _request_json(request), "spec": self._asked(spec)}
        async for _name, data in self.server.sse("/v1/exec/stream", body):
            yield _EVENT.validate_json(data)

    async def boxes(self) -> list[BoxInfo]:
        """This tenant's sessions on the server."""
        sessions = (await self.server.request("GET", "/v1/sessions")).json()
        return [
            BoxInfo(
                id=s["id"],
                backend="remote",
                owner_pid=0,
                owner_alive=True,
                created=s["created"],
                image=s["spec"].get("image"),
                labels=s["spec"].get("labels", {}),
                isolation=s.get("isolation"),
            )
            for s in sessions
        ]

    def on_session_end(self, callback: Callable[[str, str], None]) -> None:
        """Nothing to call: the server ends its sessions' boxes, and a handle is ``closed``
        once the server answers that its session is gone."""

    async def prune(self) -> list[BoxInfo]:
        """Nothing to prune here: the server prunes its own boxes."""
        return []

    async def close(self) -> None:
        """Close the connections (the server's sessions stay until deleted)."""
        for boxes in self._handles.values():
            for box in boxes:
                await box.disconnect()
        self._handles.clear()
        await self.server.close()


def _request_json(request: Request) -> Any:
    return as_request(request).model_dump(mode="json", exclude_defaults=True)


def _secrets(spec: SpecLike) -> list[str]:
    if isinstance(spec, BoxSpec):
        return list(spec.secret_values().values())
    if isinstance(spec, Mapping):
        return [str(v) for v in dict(spec.get("secrets") or {}).values()]
    return []
