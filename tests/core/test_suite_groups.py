"""The suite's workers (scripts/check runs pytest-xdist with ``--dist loadgroup``): which
tests share a worker, as README.md and docs/decisions.md say."""

from __future__ import annotations

import pytest

from tests.conftest import worker_group


def test_a_modules_tests_run_on_one_worker(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("xdist_group")
    assert marker is not None
    assert marker.args == ("tests/core/test_suite_groups.py",)


def test_every_microvm_test_runs_on_one_worker_whatever_its_module(
    request: pytest.FixtureRequest,
) -> None:
    request.node.add_marker(pytest.mark.microvm)  # marked now: nothing boots for it
    assert worker_group(request.node) == "microvm"
