"""A Python project's declared dependencies, read from its manifests: extras, PEP 735
dependency groups (expanded here, since the box's pip may not know ``--group``), Poetry and
PDM development groups, and requirements files."""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass, field
from typing import Any

from golem.checks.detect.found import RepoFiles, table
from golem.checks.detect.noxdeps import nox_requirements
from golem.checks.detect.toxdeps import tox_requirements

__all__ = [
    "DEV_GROUPS",
    "PythonProject",
    "declared_names",
    "group_requirements",
    "read_project",
    "requirement_name",
]

DEV_GROUPS = ("test", "tests", "testing", "dev")
"""Extras and groups that carry what a project's checks need, in this order."""

REQUIREMENTS = (
    "requirements.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "requirements-test.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "requirements-tests.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
    "requirements/testing.txt",
    "requirements/dev.txt",
    "requirements/development.txt",
)
MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg")
NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass
class PythonProject:
    """What the manifests declare that an install into a virtual environment needs."""

    installable: bool = False
    extras: list[str] = field(default_factory=list)
    group_requirements: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    requirement_files: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    installed: set[str] = field(default_factory=set)
    """Names of the requirements the default install puts in the venv (lower-cased)."""

    def installs(self, tool: str) -> bool:
        """Whether the default install puts ``tool`` in the venv."""
        return tool in self.installed


def read_project(files: RepoFiles) -> PythonProject:
    """The root project's Python dependencies as its manifests declare them."""
    pyproject = files.toml("pyproject.toml")
    project = PythonProject()
    project.installable = bool(
        table(pyproject, "project")
        or "build-system" in pyproject
        or table(pyproject, "tool", "poetry")
        or files.exists("setup.py")
        or _setup_cfg(files).has_section("metadata")
    )
    declared = set(table(pyproject, "project", "optional-dependencies"))
    declared |= set(table(pyproject, "tool", "poetry", "extras"))
    if _setup_cfg(files).has_section("options.extras_require"):
        declared |= set(_setup_cfg(files)["options.extras_require"])
    tox_arguments, tox_files, tox_extras = tox_requirements(files)
    nox_arguments, nox_files, nox_extras = nox_requirements(files)
    tox_arguments, tox_files = tox_arguments + nox_arguments, tox_files + nox_files
    tox_extras += nox_extras
    project.extras = [name for name in DEV_GROUPS if name in declared]
    project.extras += [
        name for name in tox_extras if name in declared and name not in project.extras
    ]
    groups = table(pyproject, "dependency-groups")
    project.groups = [name for name in DEV_GROUPS if name in groups]
    for name in project.groups:
        project.group_requirements += group_requirements(groups, name)
    project.group_requirements += _tool_groups(pyproject) + _hatch_requirements(pyproject)
    project.group_requirements += tox_arguments
    project.group_requirements = list(dict.fromkeys(project.group_requirements))
    listed = [rel for rel in REQUIREMENTS if files.exists(rel)]
    project.requirement_files = list(dict.fromkeys([*listed, *tox_files]))
    locks = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")
    present = [rel for rel in (*MANIFESTS, *locks) if files.exists(rel)]
    project.keys = [*present, *project.requirement_files]
    project.installed = _installed_names(files, project, pyproject)
    return project


def _installed_names(
    files: RepoFiles, project: PythonProject, pyproject: dict[str, Any]
) -> set[str]:
    requirements = list(project.group_requirements)
    extras = table(pyproject, "project", "optional-dependencies")
    cfg = _setup_cfg(files)
    for name in project.extras:
        listed = extras.get(name)
        requirements += listed if isinstance(listed, list) else []
        if cfg.has_option("options.extras_require", name):
            requirements += cfg["options.extras_require"][name].splitlines()
    for rel in project.requirement_files:
        requirements += (files.text(rel) or "").splitlines()
    return {requirement_name(entry) for entry in requirements if isinstance(entry, str)} - {""}


def _hatch_requirements(pyproject: dict[str, Any]) -> list[str]:
    """What hatch's default and test environments add (a hatch project often declares its
    test tools only there)."""
    envs = table(pyproject, "tool", "hatch", "envs")
    found: list[str] = []
    for env in ("default", "test", "tests", "hatch-test"):
        for key in ("dependencies", "extra-dependencies"):
            entries = table(envs, env).get(key)
            if isinstance(entries, list):
                found += [entry for entry in entries if isinstance(entry, str)]
    return found


def group_requirements(
    groups: dict[str, Any], name: str, seen: frozenset[str] = frozenset()
) -> list[str]:
    """The requirements of PEP 735 group ``name``, its ``include-group`` entries expanded
    (a cycle or an unknown group contributes nothing)."""
    if name in seen or not isinstance(groups.get(name), list):
        return []
    found: list[str] = []
    for entry in groups[name]:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            found += group_requirements(groups, entry["include-group"], seen | {name})
    return found


def _tool_groups(pyproject: dict[str, Any]) -> list[str]:
    """Poetry's and PDM's development groups, as requirement names (Poetry's version
    syntax is not PEP 508, so only the names are kept)."""
    poetry = table(pyproject, "tool", "poetry")
    names: list[str] = list(table(poetry, "dev-dependencies"))
    for group in DEV_GROUPS:
        names += list(table(poetry, "group", group, "dependencies"))
    pdm = table(pyproject, "tool", "pdm", "dev-dependencies")
    found = [name for name in names if name.lower() != "python"]
    for group in DEV_GROUPS:
        entries = pdm.get(group)
        if isinstance(entries, list):
            found += [
                entry for entry in entries if isinstance(entry, str) and not entry.startswith("-")
            ]
    return found


def _setup_cfg(files: RepoFiles) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    text = files.text("setup.cfg")
    try:
        parser.read_string(text or "")
    except configparser.Error:
        return configparser.ConfigParser(interpolation=None)
    return parser


def declared_names(files: RepoFiles, rel: str) -> set[str]:
    """The requirement names a requirements file lists, or a pyproject.toml declares
    (dependencies, extras, groups); nothing for other files."""
    if rel.endswith(".txt"):
        entries: list[Any] = (files.text(rel) or "").splitlines()
    elif rel.endswith("pyproject.toml"):
        data = files.toml(rel)
        entries = list(table(data, "project").get("dependencies") or [])
        for listed in [
            *table(data, "project", "optional-dependencies").values(),
            *table(data, "dependency-groups").values(),
        ]:
            entries += listed if isinstance(listed, list) else []
    else:
        return set()
    return {requirement_name(entry) for entry in entries if isinstance(entry, str)} - {""}


def requirement_name(requirement: str) -> str:
    """The project name a requirement string starts with, lower-cased ('' when none)."""
    match = NAME.match(requirement)
    return match[1].lower() if match else ""
