"""golem.service: the server (HTTP API, job queue, dashboard, triggers), and a client's
engine on it: ``make_engine(config)``, the engine every command uses (``RemoteEngine`` when
``[remote] url`` is set, else this machine's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from golem.service.client import RemoteEngine, make_engine

__all__ = ["RemoteEngine", "make_engine"]


def __getattr__(name: str) -> Any:
    """The client's names on first use: importing any of the server's modules must not pay
    for the HTTP client's imports, nor a command's help for any of them."""
    if name in __all__:
        from golem.service import client  # noqa: PLC0415

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
