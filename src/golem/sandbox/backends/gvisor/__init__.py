"""The gvisor backend (runsc, started by golem itself: no daemon)."""

from golem.sandbox.backends.gvisor.backend import GvisorBackend, GvisorBox

__all__ = ["GvisorBackend", "GvisorBox"]
