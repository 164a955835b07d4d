"""Automations of a real `golem serve`: their secrets, definitions and schedules."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.blueprint.repos import make_remote

GITHUB_SECRET = "github-webhook-secret-0123456789"  # noqa: S105 - a test secret

GITLAB_SECRET = "gitlab-webhook-token-0123456789"  # noqa: S105 - a test secret

WAIT = 120.0


def automation(name: str, tenant: str, remote: Path, blueprint: Path, **given: object) -> str:
    """One [[automations]] entry of golem.toml."""
    lines = [f'name = "{name}"', f'tenant = "{tenant}"', f'repo = "{remote}"',
             f'blueprint = "{blueprint}"']  # fmt: skip
    lines += [f"{key} = {json.dumps(value)}" for key, value in given.items()]
    return "[[automations]]\n" + "\n".join(lines) + "\n"


def when(read: Callable[[], Any], condition: Callable[[Any], bool]) -> Any:
    """``read()``, once ``condition`` holds for it (looked at every half second)."""
    deadline = time.monotonic() + WAIT
    while True:
        value = read()
        if condition(value):
            return value
        assert time.monotonic() < deadline, f"never came true: {value}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("automation-remotes")
    home.chmod(0o755)
    return make_remote(home)
