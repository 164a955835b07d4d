"""`golem runs show` tells what prepared the box, the baseline, each check's result in
words (the reason of a kill, flaky, failing on the base too), the failing tests, why the
run is not verified and its error."""

from __future__ import annotations

from tests.blueprint.outcomes import OOM, with_outcomes
from tests.cli.test_cli import golem, golem_env  # noqa: F401 - the fixture, shared
from tests.cli.test_runs_control_cli import keep, new_run


def test_runs_show_tells_every_result_and_why(
    golem_env: dict[str, str],  # noqa: F811 - the fixture
) -> None:
    state = with_outcomes(new_run("run-shown", status="escalated", base="main"))
    cached = {"dependencies": "python-3f2a9c", "dependencies_cached": True}
    keep(golem_env, state.model_copy(update=cached))
    done = golem({**golem_env, "COLUMNS": "250"}, "runs", "show", "run-shown")
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.decode().splitlines()]
    assert "setup failed: npm run prepare | tee log (out of memory)" in lines
    assert "not verified: no check ran on the change" in lines
    assert "dependencies python-3f2a9c: reused" in lines
    assert "prepared:" in lines
    assert "install uv sync passed 1.5s" in lines
    assert f"setup npm run prepare | tee log failed ({OOM}) 1.5s" in lines
    assert "baseline on main: lint failed (exit 1), test passed" in lines
    assert "lint ruff check . failed (exit 1) · fails on the base commit too 1.5s" in lines
    assert "build python -m build flaky (failed, then passed) 1.5s" in lines
    assert f"test pytest -q failed ({OOM}) 1.5s" in lines
    assert "✗ test: tests/test_calc.py::test_add assert 0 == 3" in lines
