"""A Python project whose pytest reports the checks read."""

from __future__ import annotations

import sys

PYTEST = (
    f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -p no:cacheprovider --color=yes"
)

CALC = {
    "test_calc.py": """\
import pytest

def add(a, b):
    return a - b

def test_add():
    assert add(2, 3) == 5

def test_ok():
    assert True

class TestThings:
    def test_raises(self):
        raise ValueError("bad value")

@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x == 1, f"x was {x}"

def test_needs(missing_fixture):
    pass
""",
}
