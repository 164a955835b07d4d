"""The scripted agent and blueprint of the CI-rounds tests: a fix the forge's CI fails once."""

from __future__ import annotations

from pathlib import Path

import yaml

import golem.blueprint
from golem.blueprint import RunState
from tests.blueprint.github_runs import (  # noqa: F401 - the loopback GitHub's fixtures
    REPO,
    TOKEN,
    config,
    github,
)

SCRIPTS = Path(__file__).parent / "scripts"

CI_FIX = f"scripted:{SCRIPTS / 'ci-fix.yaml'}"

ERROR_LINE = "##[error]CHANGELOG.md has no entry for this change"


def minion(directory: Path, **ci: object) -> str:
    """The minion blueprint, its ci node polling fast and waiting briefly."""
    source = Path(golem.blueprint.__file__).parent / "builtin" / "minion.yaml"
    blueprint = yaml.safe_load(source.read_text())
    node = next(node for node in blueprint["nodes"] if node["id"] == "ci")
    node.update({"poll": 0.05, "appear": 0.5, "wait": 0.5, **ci})
    path = directory / "minion-ci.yaml"
    path.write_text(yaml.safe_dump(blueprint))
    return str(path)


def trajectory(state: RunState, node: str) -> str:
    return "".join(Path(t).read_text() for t in state.trajectories if f"-{node}-" in t)
