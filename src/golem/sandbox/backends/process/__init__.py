"""The process backend (bubblewrap)."""

from golem.sandbox.backends.process.backend import ProcessBackend, ProcessBox

__all__ = ["ProcessBackend", "ProcessBox"]
