"""SWE-bench-format task files from elsewhere run as golem's own do: the repository cloned
by its owner/name, golem's environment checked first with the gold patch, the agent's work
judged by the hidden tests under SWE-bench's names; a task whose repository, patch or
environment cannot be had is reported as not run, with why, and tried again next time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acceptance.ecosystems import fixes_remote, git

pytestmark = pytest.mark.bwrap


def swe_bench(instance_id: str, repo: str, base: str, patch: str, test_patch: str,
              fail_to_pass: list[str]) -> dict[str, object]:  # fmt: skip
    return {
        "instance_id": instance_id, "repo": repo, "base_commit": base, "patch": patch,
        "test_patch": test_patch, "problem_statement": "count_words('') should be 0",
        "hints_text": "", "created_at": "2024-05-01T00:00:00Z", "version": "1.0",
        "FAIL_TO_PASS": json.dumps(fail_to_pass), "PASS_TO_PASS": json.dumps([]),
        "environment_setup_commit": base,
    }  # fmt: skip


def test_a_swe_bench_file_runs_where_it_can_and_says_why_not_where_it_cannot(
    reachable_dir: Path,
) -> None:
    (reachable_dir / "octo").mkdir()
    remote = fixes_remote(reachable_dir / "octo")
    base, fixed = git("rev-list", "--reverse", "main", cwd=remote).split()[:2]
    patch = git("diff", base, fixed, "--", "textstats.py", cwd=remote)
    tests = git("diff", base, fixed, "--", "test_words.py", cwd=remote)
    records = [
        swe_bench("octo__fixes-1", "octo/fixes", base, patch, tests,
                  ["test_empty (test_words.CountWords)"]),  # SWE-bench's unittest names
        swe_bench("nobody__missing-1", "nobody/missing", base, patch, tests, ["t"]),
        swe_bench("octo__fixes-2", "octo/fixes", base, patch, tests.replace("one two", "uno"),
                  ["test_empty (test_words.CountWords)"]),
        swe_bench("octo__fixes-3", "octo/fixes", base, patch, tests,
                  ["tests/test_words.py::test_empty"]),  # a runner golem's box does not run
    ]  # fmt: skip
    tasks = reachable_dir / "swe-bench.jsonl"
    tasks.write_text("".join(json.dumps(record) + "\n" for record in records))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env |= {"GOLEM_STATE_DIR": str(reachable_dir / "state"),
            "XDG_CONFIG_HOME": str(reachable_dir / "cfg")}  # fmt: skip
    out = reachable_dir / "out"
    done = subprocess.run(
        [sys.executable, "-m", "golem", "eval", "run", str(tasks), "--model", "gold",
         "--repo-url", f"{reachable_dir}/{{repo}}.git", "--out", str(out), "--json"],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_task = {task["instance_id"]: task for task in report["tasks"]}
    assert (by_task["octo__fixes-1"]["resolved"], by_task["octo__fixes-1"]["attempts"]) == (1, 1)
    assert by_task["nobody__missing-1"]["not_run"].startswith(
        f"cannot fetch the repository {reachable_dir}/nobody/missing.git:"
    )
    assert by_task["octo__fixes-2"]["not_run"].startswith(
        "its test_patch does not apply at its base_commit:"
    )
    assert by_task["octo__fixes-3"]["not_run"].startswith(
        "in golem's environment the gold patch does not resolve it "
        "(tests/test_words.py::test_empty did not pass)"
    )
    assert report["totals"]["not_run"] == 3
    assert "- nobody__missing-1 #1: not run: cannot fetch" in done.stderr
    again = subprocess.run(
        [sys.executable, "-m", "golem", "eval", "run", str(tasks), "--model", "gold",
         "--repo-url", f"{reachable_dir}/{{repo}}.git", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert "3 attempt(s) to run" in again.stderr  # those not run, and only those
