"""The detected Python commands work in a real box: a venv at /workspace/.venv, the
project installed into it, and the checks finding it through the conventions' env."""

from __future__ import annotations

import pytest

from golem.checks import load_conventions
from golem.sandbox import Engine, ExecRequest
from tests.checks.conftest import MakeRepo

pytestmark = pytest.mark.bwrap

SETUP_PY = """\
from setuptools import find_packages, setup

setup(name="tally", version="1.0", packages=find_packages("src"), package_dir={"": "src"})
"""
TALLY = """\
def count(text):
    words = text.split()
    return {word: words.count(word) for word in words}
"""
TEST = """\
import unittest

import tally


class TallyTest(unittest.TestCase):
    def test_count(self) -> None:
        self.assertEqual(tally.count("a b a"), {"a": 2, "b": 1})
"""
PREFIX = "python3 -c 'import sys, tally; print(sys.prefix)'"
OFFLINE = {"PIP_NO_INDEX": "1"}
"""The box has no network (so no index), and a setup.py project without a pyproject.toml
needs nothing but the venv's own setuptools; a real install reaches PyPI (DEPS's tests)."""


async def test_the_detected_venv_install_and_test_run_offline_in_a_box(
    engine: Engine, make_repo: MakeRepo
) -> None:
    repo = make_repo(
        {
            "setup.py": SETUP_PY,
            "src/tally/__init__.py": TALLY,
            "tests/test_tally.py": TEST,
        }
    )
    conventions = load_conventions(repo)
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e .",
    ]
    assert conventions.test == ["python3 -m unittest discover -s tests"]

    async with engine.session(engine.spec(network="none")) as box:
        await box.put_dir(repo, ".")
        for command in conventions.install:
            done = await box.execute(ExecRequest(cmd=command, env={**conventions.env, **OFFLINE}))
            assert done.exit_code == 0, done.stderr_text
        checked = await box.execute(ExecRequest(cmd=conventions.test[0], env=conventions.env))
        where = await box.execute(ExecRequest(cmd=PREFIX, env=conventions.env))

    assert checked.exit_code == 0, checked.stderr_text
    assert "Ran 1 test" in checked.stderr_text
    assert where.stdout_text.strip() == "/tmp/golem/venv"
