"""`golem serve` on a Ray cluster: the cluster's box slots, not the server's default
``max_sessions``, bound the sessions, unless the operator sets it."""

from __future__ import annotations

from pathlib import Path

from golem.cli.serve_cmd import cluster_limits
from golem.core import load_config


def test_a_cluster_control_plane_lifts_the_default_max_sessions(tmp_path: Path) -> None:
    config = load_config({"state_dir": str(tmp_path), "cluster": {"ray_address": "auto"}}, files=[])
    served = cluster_limits(config)
    assert served.server.max_sessions > 10_000
    assert served.server.policies == config.server.policies  # each tenant's share stays


def test_a_max_sessions_set_explicitly_stays_on_a_cluster(tmp_path: Path) -> None:
    toml = tmp_path / "golem.toml"
    toml.write_text('[cluster]\nray_address = "auto"\n[server]\nmax_sessions = 5\n')
    assert cluster_limits(load_config(files=[toml])).server.max_sessions == 5


def test_one_machine_keeps_the_default_max_sessions(tmp_path: Path) -> None:
    config = load_config({"state_dir": str(tmp_path)}, files=[])
    assert cluster_limits(config).server.max_sessions == config.server.max_sessions == 32
