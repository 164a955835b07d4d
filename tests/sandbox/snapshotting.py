"""What the snapshot tests share (tests/sandbox/test_snapshots.py and their attacks in
tests/attacks/test_snapshots.py): the backends that take snapshots, and two small steps."""

from __future__ import annotations

import pytest

from golem.sandbox import Box, Engine, LocalEngine
from tests.conftest import BOTH_BACKENDS

SNAPSHOT_BACKENDS = [
    pytest.param("microvm", marks=[*p.marks, pytest.mark.own_engine])
    if p.values[0] == "microvm"
    else p
    for p in BOTH_BACKENDS
]
"""Every backend takes snapshots; a microvm test has an engine of its own (the snapshots it
inspects are in its own state directory, not the session's shared engine's)."""


def local(engine: Engine) -> LocalEngine:
    """The test's engine, which takes snapshots: this machine's."""
    assert isinstance(engine, LocalEngine)
    return engine


async def run(box: Box, command: str) -> str:
    """``command``'s output in ``box``; the test fails when it fails."""
    result = await box.execute(command)
    assert result.exit_code == 0, result.stderr_text
    return result.stdout_text
