"""A node of the cluster as the control plane sees it: its box host (``NodeEngine``, the
RemoteEngine of the host's sessions API over a ``NodeConnection``, the transport that
knows a lost node), how it is started, and how they all end."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import ray
from ray.exceptions import RayActorError

from golem.cluster.boxhost import BoxHost
from golem.core.config import GolemConfig
from golem.core.errors import GolemError, NodeLost
from golem.sandbox import ProblemFrame, RemoteEngine, ServerConnection, error_of

__all__ = [
    "BOX_HOST_PREFIX",
    "BoxHostActor",
    "Handle",
    "NodeConnection",
    "NodeEngine",
    "refusal",
    "stop_box_hosts",
    "why",
]

PING_TIMEOUT = 10.0
BOX_HOST_PREFIX = "golem-box-host-"

Handle = Any
"""A Ray actor handle (Ray's own types are partial; golem treats handles as Any)."""
BoxHostActor: Any = ray.remote(BoxHost)


def stop_box_hosts(namespace: str) -> list[str]:
    """End every box host of ``namespace`` (their sessions and boxes); their node ids."""
    stopped = []
    for named in ray.util.list_named_actors(all_namespaces=True):
        if named["namespace"] == namespace and named["name"].startswith(BOX_HOST_PREFIX):
            host = ray.get_actor(named["name"], namespace=namespace)
            with contextlib.suppress(RayActorError):
                ray.get(host.stop.remote(), timeout=60)
            ray.kill(host)
            stopped.append(named["name"].removeprefix(BOX_HOST_PREFIX))
    return stopped


def why(exc: BaseException) -> str:
    """The line of a Ray actor error that says why the actor died."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = [line for line in lines if "died because" in line or "node" in line.lower()]
    return (said or lines or [type(exc).__name__])[-1]


REFUSED = re.compile(r"^golem\.core\.errors\.\w+: (.+)$", re.MULTILINE)


def refusal(exc: RayActorError) -> str:
    """Why a box host died: its own error when it refused to start (a creation task's
    GolemError, the last in Ray's traceback), else Ray's reason."""
    found = REFUSED.findall(str(exc))
    return str(found[-1]) if found else why(exc)


class NodeConnection(ServerConnection):
    """The transport to one node's box host: a host that no longer answers turns the errors
    of its requests, downloads, streams and call channels into NodeLost."""

    def __init__(self, node_id: str, host: Handle, url: str, key: str) -> None:
        super().__init__(url, key)
        self.node_id = node_id
        self.host = host
        self.lost: str | None = None

    def error_of(self, problem: ProblemFrame) -> GolemError:
        """As a server's, but an unreachable host of a lost node is NodeLost."""
        if problem.status == 503 and self.lost is not None:
            return NodeLost(self.lost)
        return error_of(problem)

    async def check(self) -> None:
        """Raise NodeLost when the box host (so its node) is gone."""
        if self.lost is None:
            try:
                await asyncio.wait_for(self.host.ping.remote(), PING_TIMEOUT)
            except RayActorError as exc:
                self.lost = f"the session's node {self.node_id} is gone: {why(exc)}"
            except TimeoutError:
                return  # slow, not known dead: the caller's own error stands
            else:
                return
        raise NodeLost(self.lost)

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            return await super().request(method, path, **kwargs)
        except GolemError as exc:
            if getattr(exc, "http_status", None) == 503:
                await self.check()
            raise

    async def download(self, path: str, params: dict[str, Any]) -> AsyncIterator[bytes]:
        try:
            async for chunk in super().download(path, params):
                yield chunk
        except GolemError as exc:
            if getattr(exc, "http_status", None) == 503:
                await self.check()
            raise

    async def sse(self, path: str, body: Any) -> AsyncIterator[tuple[str, str]]:
        try:
            async for message in super().sse(path, body):
                yield message
        except GolemError as exc:
            if getattr(exc, "http_status", None) == 503:
                await self.check()
            raise


class NodeEngine(RemoteEngine):
    """The sessions API of one node's box host, over its ``NodeConnection``."""

    def __init__(self, node_id: str, host: Handle, url: str, key: str, config: GolemConfig) -> None:
        self.node = NodeConnection(node_id, host, url, key)
        super().__init__(url, key, config=config, server_labels=True, connection=self.node)
        self.node_id = node_id
        self.host = host

    @property
    def lost(self) -> str | None:
        """Why the node is gone, once it is known to be."""
        return self.node.lost

    @lost.setter
    def lost(self, why: str) -> None:
        self.node.lost = why

    async def forget(self, box_id: str) -> None:
        """The session is gone with its node: its handles here are closed."""
        for box in self._handles.pop(box_id, []):
            await box.end()
