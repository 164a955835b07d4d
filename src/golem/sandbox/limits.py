"""How much the host takes back from one box: the caps of its spec, and what the box could
hold at all (a file's size is the box's word; a sparse file says more than the box held)."""

from __future__ import annotations

from dataclasses import dataclass

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size
from golem.core.spec import BoxSpec

__all__ = ["MAX_ENTRIES", "MAX_NAME_BYTES", "TakebackLimits", "box_holds_at_most"]

MAX_ENTRIES = 200_000
MAX_NAME_BYTES = 64 * 1024 * 1024  # the distinct names of one transfer (each is kept)
OTHER_TMPFS = 128 * 1024 * 1024  # /dev/shm (64 MiB on every backend), /run and the like


def box_holds_at_most(spec: BoxSpec) -> int | None:
    """The most bytes of files a box can hold: its tmpfs mounts (/workspace, /tmp, and
    ``OTHER_TMPFS`` for the small ones), and no more than its memory, which they count
    against; None where it writes to the host's disk (a bound workspace, a writable
    root)."""
    if spec.workspace is not None or not spec.read_only_root:
        return None
    held = spec.workspace_size + spec.tmp_size + OTHER_TMPFS
    return held if spec.memory is None else min(held, spec.memory)


@dataclass(frozen=True)
class TakebackLimits:
    """How much the host takes back from one box."""

    max_file_bytes: int
    max_bytes: int
    max_entries: int = MAX_ENTRIES
    max_name_bytes: int = MAX_NAME_BYTES
    held: int | None = None
    """The most the box could hold, where known (``box_holds_at_most``); the caps above
    are no larger: whatever a file's size says, it cannot hold more than its box did."""

    @classmethod
    def of(cls, spec: BoxSpec) -> TakebackLimits:
        """The limits a box's spec sets, within what the box could hold."""
        held = box_holds_at_most(spec)
        if held is None:
            return cls(spec.max_file_bytes, spec.max_takeback_bytes)
        return cls(min(spec.max_file_bytes, held), min(spec.max_takeback_bytes, held), held=held)

    def _limit(self, limit: int, option: str) -> str:
        if self.held is not None and self.held <= limit:
            return (
                f"what the box could hold ({format_size(self.held)}: its memory, /workspace "
                "and /tmp; a sparse file's size counts whole)"
            )
        return f"its {option} ({format_size(limit)})"

    def file_limit(self) -> str:
        """The cap on one file, as a message names it."""
        return self._limit(self.max_file_bytes, "max_file_bytes")

    def transfer_limit(self) -> str:
        """The cap on one transfer, as a message names it."""
        return self._limit(self.max_bytes, "max_takeback_bytes")

    def file_too_large(self, path: str, size: int) -> UnsafeBoxOutput:
        """The refusal of a file the box says has ``size`` bytes."""
        return UnsafeBoxOutput(
            path,
            f"the box announced {format_size(size)}, over {self.file_limit()}",
            "takeback.size",
        )
