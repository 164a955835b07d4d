"""What the snapshot tests share (tests/sandbox/test_snapshots.py and their attacks in
tests/attacks/test_snapshots.py): the backends that take snapshots, and two small steps."""

from __future__ import annotations

from golem.sandbox import Box, Engine, LocalEngine
from tests.conftest import BOTH_BACKENDS

SNAPSHOT_BACKENDS = [p for p in BOTH_BACKENDS if p.values[0] in ("process", "docker", "podman")]
"""The backends whose boxes take snapshots (gVisor and microVM refuse, tested)."""


def local(engine: Engine) -> LocalEngine:
    """The test's engine, which takes snapshots: this machine's."""
    assert isinstance(engine, LocalEngine)
    return engine


async def run(box: Box, command: str) -> str:
    """``command``'s output in ``box``; the test fails when it fails."""
    result = await box.execute(command)
    assert result.exit_code == 0, result.stderr_text
    return result.stdout_text
