"""RemoteEngine: the Engine's interface, served by a golem server over HTTP.

    engine = make_engine(config)        # Engine, or RemoteEngine when [remote] url is set
    async with engine, engine.session(engine.spec(memory="1g")) as box:
        result = await box.execute("pytest -q")

Errors the server answers come back as the same GolemError classes (by the problem's
``kind``), with the server's message.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
from httpx_sse import aconnect_sse
from pydantic import TypeAdapter

from golem.core import errors as golem_errors
from golem.core.config import GolemConfig, load_config
from golem.core.errors import ConfigError, GolemError, RemoteError
from golem.core.events import ExecEvent
from golem.core.spec import BoxSpec
from golem.sandbox import BoxInfo, Engine, ExecRequest, ExecResult
from golem.sandbox.box import as_request
from golem.service.remote_box import RemoteBox

__all__ = ["RemoteEngine", "make_engine", "spec_payload"]

_EVENT: TypeAdapter[ExecEvent] = TypeAdapter(ExecEvent)


def raise_for_problem(response: httpx.Response) -> None:
    """Turn a problem-details answer into the GolemError it was on the server."""
    if response.is_success:
        return
    try:
        body = response.json()
    except ValueError:
        body = {}
    detail = str(body.get("detail") or response.text or response.reason_phrase)
    kind = getattr(golem_errors, str(body.get("kind", "")), None)
    if isinstance(kind, type) and issubclass(kind, GolemError) and kind is not GolemError:
        try:
            error = kind(detail)
        except TypeError:
            error = RemoteError(response.status_code, detail)
        raise error
    raise RemoteError(response.status_code, f"the server answered {response.status_code}: {detail}")


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


class RemoteEngine:
    """An Engine whose boxes run on a golem server."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        config: GolemConfig | None = None,
        timeout: float = 600.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = config or load_config()
        self.url = url.rstrip("/")
        self._key = key
        headers = {"Authorization": f"Bearer {key}"}
        self._http = httpx.AsyncClient(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )
        # Engine.get_session and Engine.boxes are synchronous: two quick GETs, blocking.
        self._sync = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    async def __aenter__(self) -> RemoteEngine:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One API request; a problem answer raises."""
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise RemoteError(503, f"cannot reach the golem server at {self.url}: {exc}") from exc
        raise_for_problem(response)
        return response

    async def download(self, path: str, params: dict[str, Any]) -> AsyncIterator[bytes]:
        """GET ``path``; its body in chunks as they arrive (a problem answer raises)."""
        try:
            async with self._http.stream("GET", path, params=params) as response:
                if not response.is_success:
                    await response.aread()
                    raise_for_problem(response)
                async for chunk in response.aiter_bytes():
                    yield chunk
        except httpx.HTTPError as exc:
            raise RemoteError(503, f"cannot reach the golem server at {self.url}: {exc}") from exc

    async def sse(self, path: str, body: Any) -> AsyncIterator[ExecEvent]:
        """POST ``body``, then the server-sent events that answer it."""
        async with aconnect_sse(self._http, "POST", path, json=body) as source:
            if not source.response.is_success:
                await source.response.aread()
                raise_for_problem(source.response)
            async for message in source.aiter_sse():
                yield _EVENT.validate_json(message.data)

    def websocket_url(self, path: str) -> str:
        """The ws:// (or wss://) URL of an API path."""
        return self.url.replace("http", "ws", 1) + path

    @property
    def key(self) -> str:
        """The API key (for the WebSocket handshake)."""
        return self._key

    def spec(self, spec: BoxSpec | Mapping[str, Any] | None = None, **overrides: Any) -> BoxSpec:
        """A BoxSpec of the fields given; the server applies its own defaults to the rest."""
        given = spec_payload(spec)
        given.update(overrides)
        return BoxSpec.model_validate(given)

    async def start(self, *, prewarm: bool = False, specs: Sequence[BoxSpec] = ()) -> None:
        """Nothing to do: the server keeps its own warm pool."""

    async def create_session(
        self, spec: BoxSpec | Mapping[str, Any] | None = None, *, on_event: object = None
    ) -> RemoteBox:
        """A session on the server."""
        info = (
            await self.request("POST", "/v1/sessions", json={"spec": spec_payload(spec)})
        ).json()
        return RemoteBox(self, info, secrets=_secrets(spec))

    def _get(self, path: str) -> Any:
        try:
            response = self._sync.get(path)
        except httpx.HTTPError as exc:
            raise RemoteError(503, f"cannot reach the golem server at {self.url}: {exc}") from exc
        raise_for_problem(response)
        return response.json()

    def get_session(self, box_id: str) -> RemoteBox:
        """A handle on an existing session of this key's tenant."""
        return RemoteBox(self, self._get(f"/v1/sessions/{box_id}"))

    async def remove_session(self, box_id: str) -> None:
        """End a session."""
        await self.request("DELETE", f"/v1/sessions/{box_id}")

    def session(
        self, spec: BoxSpec | Mapping[str, Any] | None = None, *, on_event: object = None
    ) -> _Session:
        """``async with engine.session(spec) as box:`` one remote box for many calls."""
        return _Session(self, spec)

    async def execute(
        self,
        request: ExecRequest | str | Sequence[str],
        spec: BoxSpec | Mapping[str, Any] | None = None,
    ) -> ExecResult:
        """One call in a box of its own on the server."""
        body = {"request": _request_json(request), "spec": spec_payload(spec)}
        return ExecResult.model_validate((await self.request("POST", "/v1/exec", json=body)).json())

    async def stream(
        self,
        request: ExecRequest | str | Sequence[str],
        spec: BoxSpec | Mapping[str, Any] | None = None,
    ) -> AsyncIterator[ExecEvent]:
        """One call in a box of its own on the server, its events as they come."""
        body = {"request": _request_json(request), "spec": spec_payload(spec)}
        async for event in self.sse("/v1/exec/stream", body):
            yield event

    def boxes(self) -> list[BoxInfo]:
        """This tenant's sessions on the server."""
        sessions = self._get("/v1/sessions")
        return [
            BoxInfo(id=s["id"], backend="remote", owner_pid=0, owner_alive=True,
                    created=s["created"], image=s["spec"].get("image"),
                    labels=s["spec"].get("labels", {}))
            for s in sessions
        ]  # fmt: skip

    async def prune(self) -> list[BoxInfo]:
        """Nothing to prune here: the server prunes its own boxes."""
        return []

    async def close(self) -> None:
        """Close the connections (the server's sessions stay until deleted)."""
        await self._http.aclose()
        self._sync.close()


class _Session:
    def __init__(self, engine: RemoteEngine, spec: BoxSpec | Mapping[str, Any] | None) -> None:
        self._engine = engine
        self._spec = spec
        self._box: RemoteBox | None = None

    async def __aenter__(self) -> RemoteBox:
        self._box = await self._engine.create_session(self._spec)
        return self._box

    async def __aexit__(self, *_exc: object) -> None:
        if self._box is not None:
            await self._engine.remove_session(self._box.id)


def _request_json(request: ExecRequest | str | Sequence[str]) -> Any:
    return as_request(request).model_dump(mode="json", exclude_defaults=True)


def _secrets(spec: BoxSpec | Mapping[str, Any] | None) -> list[str]:
    if isinstance(spec, BoxSpec):
        return list(spec.secret_values().values())
    if isinstance(spec, Mapping):
        return [str(v) for v in dict(spec.get("secrets") or {}).values()]
    return []


def make_engine(config: GolemConfig | None = None) -> Engine | RemoteEngine:
    """The engine the configuration names: a server's when ``[remote] url`` is set (its key
    from ``[remote] key_env``), else this machine's."""
    settings = config or load_config()
    remote = settings.remote
    if remote.url is None:
        return Engine(settings)
    key = os.environ.get(remote.key_env)
    if not key:
        raise ConfigError(
            f"[remote] url is {remote.url} but {remote.key_env} holds no API key; export it"
        )
    return RemoteEngine(remote.url, key, config=settings, timeout=remote.timeout)
