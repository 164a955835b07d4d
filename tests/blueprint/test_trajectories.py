"""Each agent step of a run writes its own trajectory file: fix rounds of one loop node,
run within the same second, never overwrite each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.agent.trajectory import read_trajectory
from tests.blueprint.runs import (  # noqa: F401 - the fixtures of the run tests
    SCRIPTS,
    MakeRunner,
    make_runner,
    remote,
    request,
    store,
)

pytestmark = pytest.mark.bwrap


async def test_every_fix_round_keeps_its_own_trajectory(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    state = await make_runner().start(request(remote, f"scripted:{SCRIPTS / 'round2.yaml'}"))
    assert state.status == "succeeded", state.error
    names = [Path(path).name for path in state.trajectories]
    assert names == [
        "trajectory-implement-1.jsonl", "trajectory-verify-1.jsonl", "trajectory-verify-2.jsonl",
    ]  # fmt: skip
    summaries = []
    for path in state.trajectories:
        events, _ = read_trajectory(Path(path))
        summaries.append(events[-1].model_dump()["outcome"]["summary"])
    assert summaries == [
        "add() now multiplies", "add() now subtracts the other way", "add() adds its arguments",
    ]  # fmt: skip
