"""Python detection: a virtual environment with the project's extras, groups and
requirements (never the system Python), pytest when used, unittest discovery otherwise."""

from __future__ import annotations

import subprocess
import sys

from golem.checks import RepoConventions, load_conventions
from golem.core import BOX_PATH
from tests.checks.conftest import MakeRepo

HATCH_PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "humanize-like"
version = "1.0"
dependencies = []

[project.optional-dependencies]
tests = ["freezegun", "pytest", "pytest-cov"]

[dependency-groups]
lint = ["ruff>=0.5", "mypy"]
dev = [{include-group = "lint"}, "pre-commit"]

[tool.ruff]
line-length = 100

[tool.pytest.ini_options]
addopts = "-ra"
"""
VENV_ENV = {
    "VIRTUAL_ENV": "/tmp/golem/venv",
    "PATH": f"/tmp/golem/venv/bin:{BOX_PATH}",
}
PYPI = ["pypi.org", "files.pythonhosted.org"]


def test_a_hatch_project_installs_its_test_extras_and_expanded_groups_into_a_venv(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"pyproject.toml": HATCH_PYPROJECT, "tests/test_x.py": "def test_x(): ...\n"})

    conventions = load_conventions(repo)

    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e '.[tests]' 'ruff>=0.5' mypy pre-commit",
    ]
    assert conventions.test == ["python3 -m pytest"]
    assert conventions.lint == ["ruff check ."]  # configured and installed by the dev group
    assert conventions.cache == ["/tmp/golem/venv"]
    assert conventions.cache_keys == ["pyproject.toml"]
    assert conventions.registries == PYPI
    assert conventions.env == VENV_ENV
    assert conventions.ecosystems == ["python"]
    assert not any("--group" in command or "pip install -e" in command.split(" -m ")[0]
                   for command in conventions.install)  # fmt: skip


def test_no_install_ever_uses_the_system_pythons_pip(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "setup.py": "from setuptools import setup\nsetup(name='x')\n",
            "requirements-dev.txt": "pytest==8.0\n",
            "requirements.txt": "requests\n",
            "tests/test_a.py": "import pytest\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e . -r requirements.txt "
        "-r requirements-dev.txt",
    ]
    assert conventions.cache_keys == ["setup.py", "requirements.txt", "requirements-dev.txt"]
    assert all(not c.startswith(("pip", "python3 -m pip")) for c in conventions.install)


def test_pytest_is_installed_when_the_tests_import_it_and_nothing_declares_it(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            "pyproject.toml": '[project]\nname = "x"\nversion = "0"\n',
            "tests/test_a.py": "import pytest\n\ndef test_a(): ...\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install[-1] == "/tmp/golem/venv/bin/python -m pip install -e . pytest"
    assert conventions.test == ["python3 -m pytest"]
    assert [f.why for f in conventions.findings if f.step == "test"] == ["test files import pytest"]


def test_plain_test_functions_without_a_manifest_run_by_pytest_in_a_venv(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2)\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv", "/tmp/golem/venv/bin/python -m pip install pytest",
    ]  # fmt: skip
    assert conventions.test == ["python3 -m pytest"]
    [why] = [f.why for f in conventions.findings if f.step == "test"]
    assert why == "plain test functions (pytest style), no unittest.TestCase"
    assert _ran(repo, "python3 -m unittest discover") == 0  # what discovery would "pass" on


def test_plain_unittest_files_without_a_manifest_run_by_discovery_without_a_venv(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            "shlex_like.py": "def split(s):\n    return s.split()\n",
            "test_shlex_like.py": (
                "import unittest\nimport shlex_like\n\n"
                "class T(unittest.TestCase):\n"
                "    def test_split(self):\n"
                "        self.assertEqual(shlex_like.split('a b'), ['a', 'b'])\n"
            ),
        }
    )

    conventions = load_conventions(repo)

    assert conventions == RepoConventions(
        test=["python3 -m unittest discover"],
        ecosystems=["python"],
        findings=conventions.findings,
        source="detected: ecosystem default (test)",
    )
    assert _ran(repo, conventions.test[0]) == 1


def test_unittest_discovery_starts_in_each_test_directory_that_is_not_a_package(
    make_repo: MakeRepo,
) -> None:
    test = (
        "import unittest\nimport lib\n\nclass T(unittest.TestCase):\n"
        "    def test_{n}(self):\n        self.assertTrue(lib.ok())\n"
    )
    repo = make_repo(
        {
            "lib.py": "def ok():\n    return True\n",
            "tests/test_one.py": test.format(n="one"),  # no __init__.py: 3.11 skips it from .
            "pkg/__init__.py": "",
            "pkg/tests/__init__.py": "",
            "pkg/tests/test_two.py": test.format(n="two"),
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == [
        "python3 -m unittest discover -s pkg -t .",
        "python3 -m unittest discover -s tests",
    ]
    assert [_ran(repo, command) for command in conventions.test] == [1, 1]


def _ran(repo: object, command: str) -> int:
    """How many tests ``command`` ran in ``repo``, with this interpreter as python3."""
    argv = [sys.executable, *command.split()[1:]]
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=True)  # type: ignore[call-overload]
    line = next(line for line in done.stderr.splitlines() if line.startswith("Ran "))
    return int(line.split()[1])


def test_what_tox_installs_for_the_tests_goes_into_the_venv(make_repo: MakeRepo) -> None:
    tox = """\
[tox]
envlist = py{39,310,311}, lint

[testenv]
extras = tests
deps =
    freezegun
    py39: backports.zoneinfo
    pytestmain: git+https://github.com/pytest-dev/pytest.git@main
    -r{toxinidir}/requirements/ci.txt
    {[base]deps}
commands = pytest {posargs}
"""
    repo = make_repo(
        {
            "tox.ini": tox,
            "requirements/ci.txt": "pytest-cov\n",
            "pyproject.toml": HATCH_PYPROJECT.replace("[dependency-groups]", "[x]"),
            "tests/test_x.py": "import pytest\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install[1] == (
        "/tmp/golem/venv/bin/python -m pip install -e '.[tests]' freezegun -r requirements/ci.txt"
    )
    assert conventions.test == ["pytest"]  # tox's own command, from the venv
    assert "requirements/ci.txt" in conventions.cache_keys


def test_pytest_installed_but_no_tests_found_is_no_check(make_repo: MakeRepo) -> None:
    pyproject = (
        '[project]\nname = "x"\nversion = "0"\n[project.optional-dependencies]\ntest = ["pytest"]\n'
    )
    repo = make_repo({"pyproject.toml": pyproject, "x.py": "X = 1\n"})

    conventions = load_conventions(repo)

    assert conventions.test == []  # pytest would collect nothing and fail (exit 5)
    assert not conventions.verifies
    assert conventions.install[-1] == "/tmp/golem/venv/bin/python -m pip install -e '.[test]'"


def test_a_django_project_without_pytest_runs_its_own_test_runner(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "manage.py": "import django\n",
            "requirements.txt": "Django>=5\n",
            "shop/tests.py": "from django.test import TestCase\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["python3 manage.py test"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -r requirements.txt",
    ]


def test_what_the_nox_test_session_installs_goes_into_the_venv(make_repo: MakeRepo) -> None:
    noxfile = """\
import nox

LINT = ["ruff"]


@nox.session(python=["3.11", "3.12"], name="tests")
def run_tests(session):
    session.install("-e", ".[tests]")
    session.install("-r", "requirements/test.txt", "hypothesis")
    session.install(*LINT)
    session.run("pytest")


@nox.session
def docs(session):
    session.install("sphinx")
"""
    repo = make_repo(
        {
            "noxfile.py": noxfile,
            "requirements/test.txt": "pytest\n",
            "pyproject.toml": HATCH_PYPROJECT.replace("[dependency-groups]", "[x]"),
            "tests/test_x.py": "import pytest\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install[1] == (
        "/tmp/golem/venv/bin/python -m pip install -e '.[tests]' hypothesis "
        "-r requirements/test.txt"
    )
    assert conventions.test == ["python3 -m pytest"]
