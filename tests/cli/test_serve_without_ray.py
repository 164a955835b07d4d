"""`golem serve` and `golem cluster status` with ``[cluster] ray_address`` set where Ray is
not installed: a clear error naming the extra, before the server listens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_cluster_without_ray_installed_is_a_clear_error(tmp_path: Path) -> None:
    hidden = tmp_path / "no-ray" / "ray"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'ray\'", name="ray")\n'
    )
    config = tmp_path / "golem.toml"
    config.write_text('[cluster]\nray_address = "127.0.0.1:1"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env["GOLEM_STATE_DIR"] = str(tmp_path / "state")
    env["PYTHONPATH"] = os.pathsep.join([str(hidden.parent), env.get("PYTHONPATH", "")])
    for command in (["serve", "--port", "0"], ["cluster", "status"]):
        done = subprocess.run(
            [sys.executable, "-m", "golem", *command, "--config", str(config)],
            capture_output=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode != 0
        assert b"pip install 'golem[ray]'" in done.stderr
        assert b"golem serve: http" not in done.stderr  # it never listened
