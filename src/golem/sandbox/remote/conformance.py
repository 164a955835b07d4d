"""Both implementations of the sandbox's protocols, as mypy sees them: this module only
type-checks that each local and remote class is an ``Engine``, ``Box``, ``Interaction`` or
``Terminal`` (the session parity tests check that they behave alike)."""

from __future__ import annotations

from golem.sandbox.box import LocalBox, LocalInteraction, LocalTerminal
from golem.sandbox.contracts import Box, Engine, Interaction, Terminal
from golem.sandbox.engine import LocalEngine
from golem.sandbox.remote.box import RemoteBox
from golem.sandbox.remote.calls import RemoteInteraction, RemoteTerminal
from golem.sandbox.remote.engine import RemoteEngine

__all__: list[str] = []


def _engines(local: LocalEngine, remote: RemoteEngine) -> list[Engine]:
    return [local, remote]


def _boxes(local: LocalBox, remote: RemoteBox) -> list[Box]:
    return [local, remote]


def _interactions(local: LocalInteraction, remote: RemoteInteraction) -> list[Interaction]:
    return [local, remote]


def _terminals(local: LocalTerminal, remote: RemoteTerminal) -> list[Terminal]:
    return [local, remote]
