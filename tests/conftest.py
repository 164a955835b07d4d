"""Shared fixtures: a real engine on a temporary state directory, real bubblewrap boxes.

Tests marked ``bwrap`` (or ``docker``) skip locally when the machine lacks the tool; under
CI (``CI`` set) such a skip is turned into a failure, so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.core import GolemConfig, load_config
from golem.sandbox import Box, Engine

ENFORCED_MARKERS = ("bwrap", "docker")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("bwrap") and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (scripts/setup installs it)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    enforced = any(item.get_closest_marker(m) for m in ENFORCED_MARKERS)
    if report.skipped and enforced and os.environ.get("CI"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {report.longrepr}"
    return report


@pytest.fixture
def config(tmp_path: Path) -> GolemConfig:
    """Default configuration with a private state directory and no config files."""
    return load_config({"state_dir": str(tmp_path / "state")}, files=[])


@pytest.fixture
async def engine(config: GolemConfig) -> AsyncIterator[Engine]:
    """A real engine; every box it made is gone after the test."""
    async with Engine(config) as engine:
        yield engine


@pytest.fixture
async def box(engine: Engine) -> AsyncIterator[Box]:
    """A persistent box with default limits."""
    async with engine.session() as box:
        yield box


@pytest.fixture
def reachable_dir() -> Iterator[Path]:
    """A fresh directory that the unprivileged user running boxes can reach.

    pytest's tmp_path lives under a 0700 directory when we are root; boxes run bubblewrap
    as ``nobody`` then, which could not reach it.
    """
    directory = Path(tempfile.mkdtemp(prefix="golem-test-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def box_owned_dir(reachable_dir: Path) -> Path:
    """A host directory that boxes may write (owned by the run_as user when we are root)."""
    directory = reachable_dir / "workspace"
    directory.mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam("nobody")
        os.chown(directory, user.pw_uid, user.pw_gid)
    return directory
