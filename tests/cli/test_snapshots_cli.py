"""`golem snapshots ls|prune` as a user runs them: a real process on a state directory
whose snapshots a real engine took."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem.core import load_config
from golem.sandbox import LocalEngine
from tests.cli.invoke import golem_in

pytestmark = pytest.mark.bwrap


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
    listed = golem_in(state, "snapshots", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    shown = [(s["tenant"], s["name"], s["digest"]) for s in json.loads(listed.stdout)]
    assert shown == [("alpha", "big", big.digest), ("default", "small", small.digest)]
    table = golem_in(state, "snapshots", "ls").stdout
    assert "alpha" in table
    assert f"sha256:{big.digest[:12]}" in table

    refused = golem_in(state, "snapshots", "prune", "--older-than", "soon")
    assert refused.returncode == 2
    assert "not a duration" in refused.stderr
    assert golem_in(state, "snapshots", "prune").returncode == 2
    assert (
        golem_in(state, "snapshots", "prune", "--older-than", "1d").stdout == "nothing to prune\n"
    )

    kept = 2 * small.size  # its archive, and its kept tree counted as much again
    pruned = golem_in(state, "snapshots", "prune", "--max-size", str(kept), "--json")
    assert [s["name"] for s in json.loads(pruned.stdout)] == ["big"]
    pruned = golem_in(state, "snapshots", "prune", "--older-than", "0s", "--json")
    assert [s["name"] for s in json.loads(pruned.stdout)] == ["small"]
    assert golem_in(state, "snapshots", "ls").stdout == "no snapshots\n"
