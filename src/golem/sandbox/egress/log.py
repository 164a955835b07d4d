"""The proxy's log entries and refusals."""

from __future__ import annotations

from dataclasses import dataclass

from golem.core.events import NetworkEvent
from golem.sandbox.egress.http import Traffic

__all__ = [
    "Logged",
]


@dataclass
class Logged:
    """A decision as logged, and the traffic counted on its connection since."""

    event: NetworkEvent
    traffic: Traffic

    def snapshot(self) -> NetworkEvent:
        """The entry with the bytes moved so far."""
        return self.event.model_copy(
            update={"bytes_up": self.traffic.up, "bytes_down": self.traffic.down}
        )
