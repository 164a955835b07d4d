"""CI runs the cluster tests: without Ray (extra ``golem[ray]``) they skip on a machine
of one's own, and fail under CI, whose setup installs the extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _collect_without_ray(tmp_path: Path, *, ci: bool) -> subprocess.CompletedProcess[bytes]:
    hidden = tmp_path / "no-ray" / "ray"
    hidden.mkdir(parents=True, exist_ok=True)
    (hidden / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'ray\'", name="ray")\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(hidden.parent), env.get("PYTHONPATH", "")])
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--collect-only",
         "tests/cluster/test_placement.py"],
        cwd=REPO, capture_output=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def test_the_cluster_tests_skip_without_ray_on_a_machine_of_ones_own(tmp_path: Path) -> None:
    done = _collect_without_ray(tmp_path, ci=False)
    assert done.returncode == 5, done.stdout  # no tests collected: the module skipped
    assert b"golem[ray]" in done.stdout


def test_the_cluster_tests_fail_without_ray_under_ci(tmp_path: Path) -> None:
    done = _collect_without_ray(tmp_path, ci=True)
    assert done.returncode not in (0, 5), done.stdout
    assert b"skipped in CI, which counts as a failure" in done.stdout
