"""The microvm backend: QEMU virtual machines with a guest kernel of their own."""

from golem.sandbox.backends.microvm.backend import MicroVMBackend
from golem.sandbox.backends.microvm.vm import MicroVMBox

__all__ = ["MicroVMBackend", "MicroVMBox"]
