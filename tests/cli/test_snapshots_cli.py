"""`golem snapshots ls|prune` as a user runs them: a real process on a state directory
whose snapshots a real engine took."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from golem.core import load_config
from golem.sandbox import LocalEngine

pytestmark = pytest.mark.bwrap


def golem(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(GOLEM_STATE_DIR=str(state), XDG_CONFIG_HOME=str(state.parent / "cfg"))
    return subprocess.run(
        [sys.executable, "-m", "golem", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


async def test_snapshots_are_listed_with_their_tenant_and_pruned_by_age_and_size(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    async with LocalEngine(load_config({"state_dir": str(state)}, files=[])) as engine:
        async with engine.session({"labels": {"golem.tenant": "alpha"}}) as box:
            await box.execute("head -c 300000 /dev/urandom > big")
            big = await engine.snapshot(box.id, "big")
        async with engine.session() as box:
            await box.execute("echo small > small")
            small = await engine.snapshot(box.id, "small")
    listed = golem(state, "snapshots", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    shown = [(s["tenant"], s["name"], s["digest"]) for s in json.loads(listed.stdout)]
    assert shown == [("alpha", "big", big.digest), ("default", "small", small.digest)]
    table = golem(state, "snapshots", "ls").stdout
    assert "alpha" in table
    assert f"sha256:{big.digest[:12]}" in table

    refused = golem(state, "snapshots", "prune", "--older-than", "soon")
    assert refused.returncode == 2
    assert "not a duration" in refused.stderr
    assert golem(state, "snapshots", "prune").returncode == 2
    assert golem(state, "snapshots", "prune", "--older-than", "1d").stdout == "nothing to prune\n"

    pruned = golem(state, "snapshots", "prune", "--max-size", str(small.size), "--json")
    assert [s["name"] for s in json.loads(pruned.stdout)] == ["big"]
    pruned = golem(state, "snapshots", "prune", "--older-than", "0s", "--json")
    assert [s["name"] for s in json.loads(pruned.stdout)] == ["small"]
    assert golem(state, "snapshots", "ls").stdout == "no snapshots\n"
