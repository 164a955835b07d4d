"""The microvm backend: QEMU virtual machines with a guest kernel of their own."""

from golem.sandbox.backends.microvm.backend import MicroVMBackend, MicroVMBox

__all__ = ["MicroVMBackend", "MicroVMBox"]
