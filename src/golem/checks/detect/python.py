"""Python, the ecosystem's way: a virtual environment in golem's home (``/tmp/golem/venv``,
outside the checkout; never the
box's system Python) with the project, its test extras and groups and its requirements
files; pytest when the project uses it (or its test files hold plain test functions only
pytest runs), else unittest discovery."""

from __future__ import annotations

import shlex

from golem.checks.detect.ecosystem import VENV, Dependencies, python_dependencies
from golem.checks.detect.found import TRUST_DEFAULT, Candidate, RepoFiles, table
from golem.checks.detect.pydeps import PythonProject, read_project
from golem.checks.detect.scan import TestFiles, scan_tests, unittest_starts

__all__ = [
    "MAKE_VENV",
    "PIP_INSTALL",
    "PythonFacts",
    "pip_install",
    "python_defaults",
    "read_python",
]

MAKE_VENV = f"python3 -m venv {VENV}"
PIP_INSTALL = f"{VENV}/bin/python -m pip install"
PYTEST = "python3 -m pytest"
DJANGO = "python3 manage.py test"
DEFAULT = "ecosystem default"
VENV_WHY = "the checks' virtual environment, never the system Python"
PYTEST_CONFIGS = ("pytest.ini", "conftest.py", "tests/conftest.py", "test/conftest.py")


class PythonFacts:
    """What the repository says about Python: its manifests and its test files."""

    def __init__(self, files: RepoFiles) -> None:
        self.files = files
        self.project: PythonProject = read_project(files)
        self.tests: TestFiles = scan_tests(files)

    @property
    def present(self) -> bool:
        """Whether the repository is a Python project (a manifest, or Python tests)."""
        return bool(self.project.keys or self.tests.python)

    @property
    def configures_pytest(self) -> bool:
        """pytest configured: its table, ini file, a ``conftest.py`` or a section."""
        pyproject = self.files.toml("pyproject.toml")
        return bool(
            table(pyproject, "tool", "pytest")
            or self.files.exists(*PYTEST_CONFIGS)
            or "[tool:pytest]" in (self.files.text("setup.cfg") or "")
            or "[pytest]" in (self.files.text("tox.ini") or "")
        )

    @property
    def uses_pytest(self) -> bool:
        """pytest configured, imported by a test file, installed for the tests, or the
        only runner of the test files' plain test functions."""
        tests = self.tests
        return (
            self.configures_pytest
            or tests.imports_pytest
            or tests.pytest_style
            or self.project.installs("pytest")
        )

    def install_arguments(self, *, with_pytest: bool) -> list[str]:
        """pip's arguments for the project with its test extras, its test and dev groups
        (expanded) and its requirements files; pytest when the tests need it and nothing
        declares it."""
        project = self.project
        arguments: list[str] = []
        if project.installable:
            extras = f"[{','.join(project.extras)}]" if project.extras else ""
            arguments += ["-e", f".{extras}"]
        arguments += project.group_requirements
        for rel in project.requirement_files:
            arguments += ["-r", rel]
        if with_pytest and not project.installs("pytest"):
            arguments.append("pytest")
        return arguments

    def dependencies(self, venv: bool) -> Dependencies:
        """The venv's cache, keys, registries and environment (nothing without a venv)."""
        return python_dependencies(self.project.keys, venv)


def read_python(files: RepoFiles) -> PythonFacts:
    """The repository's Python facts."""
    return PythonFacts(files)


def pip_install(arguments: list[str]) -> tuple[str, str]:
    """A virtual environment and one pip install of ``arguments`` into it."""
    return MAKE_VENV, f"{PIP_INSTALL} {shlex.join(arguments)}"


def python_defaults(facts: PythonFacts) -> list[Candidate]:
    """The ecosystem's defaults: the install, pytest or unittest discovery, and ruff and
    mypy when configured and declared (so the install puts them in the venv)."""
    found: list[Candidate] = []
    pytest = facts.uses_pytest
    why = _why_pytest(facts) if pytest else "test_*.py files, no pytest"
    arguments = facts.install_arguments(with_pytest=pytest)
    if arguments:
        venv, pip = pip_install(arguments)
        found.append(Candidate("install", venv, DEFAULT, VENV_WHY, TRUST_DEFAULT, "python"))
        found.append(
            Candidate("install", pip, DEFAULT, _why_install(facts), TRUST_DEFAULT, "python")
        )
    if pytest and (facts.tests.python or facts.configures_pytest):  # else it collects nothing
        found.append(Candidate("test", PYTEST, DEFAULT, why, TRUST_DEFAULT))
    elif facts.files.exists("manage.py") and facts.tests.python:  # Django's own runner
        found.append(Candidate("test", DJANGO, DEFAULT, "manage.py, no pytest", TRUST_DEFAULT))
    elif facts.tests.python:
        for start, top in unittest_starts(facts.tests):
            found.append(Candidate("test", _discover(start, top), DEFAULT, why, TRUST_DEFAULT))
    return found + _linters(facts)


def _linters(facts: PythonFacts) -> list[Candidate]:
    pyproject = facts.files.toml("pyproject.toml")
    found: list[Candidate] = []
    ruff = table(pyproject, "tool", "ruff") or facts.files.exists("ruff.toml", ".ruff.toml")
    if ruff and facts.project.installs("ruff"):
        found.append(
            Candidate(
                "lint", "ruff check .", DEFAULT, "ruff configured and installed", TRUST_DEFAULT
            )
        )
    mypy = table(pyproject, "tool", "mypy")
    if (mypy or facts.files.exists("mypy.ini", ".mypy.ini")) and facts.project.installs("mypy"):
        command = "mypy" if mypy.get("files") else "mypy ."
        found.append(
            Candidate("lint", command, DEFAULT, "mypy configured and installed", TRUST_DEFAULT)
        )
    return found


def _discover(start: str, top: str) -> str:
    command = "python3 -m unittest discover"
    if start:
        command += f" -s {shlex.quote(start)}"
    if top != start:
        command += f" -t {shlex.quote(top or '.')}"
    return command


def _why_pytest(facts: PythonFacts) -> str:
    if facts.tests.imports_pytest:
        return "test files import pytest"
    if facts.tests.pytest_style:
        return "plain test functions (pytest style), no unittest.TestCase"
    return "pytest configured or declared"


def _why_install(facts: PythonFacts) -> str:
    project = facts.project
    parts = []
    if project.installable:
        parts.append(
            "the project" + (f" with extras {', '.join(project.extras)}" if project.extras else "")
        )
    if project.groups:
        parts.append(f"groups {', '.join(project.groups)}")
    parts += project.requirement_files
    return "into the venv: " + (", ".join(parts) if parts else "pytest")
