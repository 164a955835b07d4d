"""Detecting a repository's commands from its build files, by reading them (never running).

Sources, in precedence order (for each step, the first source that names a command wins):

1. ``Makefile`` (or ``makefile``, ``GNUmakefile``): targets ``test`` (else ``check``),
   ``lint``, ``build``; the project's own entry points, so they come first.
2. ``package.json``: scripts ``test`` (not npm's placeholder), ``lint`` (and ``typecheck``),
   ``build``; setup ``npm ci`` with a lockfile (``yarn``/``pnpm`` by their lockfiles),
   ``npm install`` without.
3. ``pyproject.toml``: pytest when configured or a ``tests``/``test`` directory exists; ruff
   and mypy when configured; an editable install (with the ``dev`` or a test extra, or the
   ``dev`` dependency group, when there is one) when it declares a project.
4. ``tox.ini``: ``tox`` as the test, ``tox -e lint`` when it has a ``lint`` environment.
5. ``noxfile.py``: ``nox -s tests``/``lint`` for sessions of those names, else ``nox``.

tox and nox come after pyproject.toml because they build their own virtualenvs, which
needs the network a devbox may not have.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golem.context.contracts import RepoConventions
from golem.context.files import file_in_repo, read_text

__all__ = ["STEPS", "detect_conventions"]

STEPS = ("setup", "lint", "build", "test")
SOURCES = ("Makefile", "package.json", "pyproject.toml", "tox.ini", "noxfile.py")
MAX_READ = 1024 * 1024
TEST_EXTRAS = ("dev", "test", "tests", "testing")
NPM_PLACEHOLDER = "no test specified"
MAKE_TARGET = re.compile(r"^([^\s:#=][^:#=]*?)\s*::?(?!=)", re.MULTILINE)
NOX_SESSION = re.compile(
    r"@(?:nox\.)?session\b(?:\((?P<args>[^)]*)\))?\s*\n\s*def\s+(?P<name>\w+)", re.MULTILINE
)


@dataclass
class _Found:
    """What one build file says: commands per step, and why, for the report."""

    origin: str
    commands: dict[str, list[str]] = field(default_factory=dict)
    why: dict[str, list[str]] = field(default_factory=dict)

    def add(self, step: str, command: str, why: str) -> None:
        self.commands.setdefault(step, []).append(command)
        self.why.setdefault(step, []).append(why)


def detect_conventions(repo: Path) -> RepoConventions:
    """The conventions the build files of ``repo`` imply; empty, with a ``source`` that
    says what was looked at, when none names a command."""
    detectors: list[Callable[[Path], _Found | None]] = [
        _makefile, _package_json, _pyproject, _tox, _nox,
    ]  # fmt: skip
    findings = [found for found in (detect(repo) for detect in detectors) if found is not None]
    chosen: dict[str, _Found] = {}
    for step in STEPS:
        for found in findings:
            if found.commands.get(step):
                chosen[step] = found
                break
    if not chosen:
        return RepoConventions(source=_nothing(repo))
    used: dict[str, list[str]] = {}
    for step in STEPS:
        if step in chosen:
            used.setdefault(chosen[step].origin, []).extend(chosen[step].why[step])
    source = "; ".join(f"{origin} ({', '.join(why)})" for origin, why in used.items())
    steps = {step: found.commands[step] for step, found in chosen.items()}
    return RepoConventions(source=f"detected: {source}", **steps)


def _nothing(repo: Path) -> str:
    seen = [name for name in SOURCES if (repo / name).exists()]
    if not seen:
        return (
            "no commands found: no .golem.toml, pyproject.toml, package.json, Makefile, "
            "tox.ini or noxfile.py"
        )
    return f"no commands found: no .golem.toml, and none in {', '.join(seen)}"


def _text(repo: Path, name: str) -> str | None:
    real = file_in_repo(repo, name)
    read = read_text(real, MAX_READ) if real is not None else None
    return read.text if read is not None and not read.truncated else None


def _exists(repo: Path, *names: str) -> bool:
    return any((repo / name).exists() for name in names)


def _makefile(repo: Path) -> _Found | None:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        text = _text(repo, name)
        if text is None:
            continue
        targets = {target for match in MAKE_TARGET.finditer(text) for target in match[1].split()}
        found = _Found(name)
        test = "test" if "test" in targets else "check" if "check" in targets else None
        for step, target in (("lint", "lint"), ("build", "build"), ("test", test)):
            if target in targets:
                found.add(step, f"make {target}", f"target {target}")
        return found
    return None


def _package_json(repo: Path) -> _Found | None:
    text = _text(repo, "package.json")
    try:
        data = json.loads(text) if text is not None else None
    except ValueError:
        return None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return None
    runner, install = _node_manager(repo)
    found = _Found("package.json")
    test = scripts.get("test")
    if isinstance(test, str) and NPM_PLACEHOLDER not in test:
        found.add("test", f"{runner} test", "script test")
    for step, names in (("lint", ("lint", "typecheck", "type-check")), ("build", ("build",))):
        for name in names:
            if isinstance(scripts.get(name), str):
                found.add(step, f"{runner} run {name}", f"script {name}")
    if not found.commands:
        return None
    found.add("setup", install, install)
    return found


def _node_manager(repo: Path) -> tuple[str, str]:
    if _exists(repo, "pnpm-lock.yaml"):
        return "pnpm", "pnpm install --frozen-lockfile"
    if _exists(repo, "yarn.lock"):
        return "yarn", "yarn install --frozen-lockfile"
    if _exists(repo, "package-lock.json", "npm-shrinkwrap.json"):
        return "npm", "npm ci"
    return "npm", "npm install"


def _pyproject(repo: Path) -> _Found | None:
    text = _text(repo, "pyproject.toml")
    try:
        data = tomllib.loads(text) if text is not None else None
    except tomllib.TOMLDecodeError:
        return None
    if data is None:
        return None
    tool = _table(data, "tool")
    found = _Found("pyproject.toml")
    _python_setup(data, found)
    if "ruff" in tool or _exists(repo, "ruff.toml", ".ruff.toml"):
        found.add("lint", "ruff check .", "ruff")
    if "mypy" in tool or _exists(repo, "mypy.ini", ".mypy.ini"):
        files = _table(tool, "mypy").get("files")
        found.add("lint", "mypy" if files else "mypy .", "mypy")
    if "pytest" in tool or _exists(repo, "pytest.ini", "conftest.py", "tests", "test"):
        found.add("test", "python3 -m pytest", "pytest")
    return found


def _python_setup(data: dict[str, Any], found: _Found) -> None:
    project = _table(data, "project")
    if not project or "build-system" not in data:
        return  # not an installable project (only tool settings)
    extras = _table(project, "optional-dependencies")
    groups = _table(data, "dependency-groups")
    extra = next((name for name in TEST_EXTRAS if name in extras), None)
    if extra is not None:
        found.add("setup", f"python3 -m pip install -e '.[{extra}]'", f"{extra} extras")
    elif "dev" in groups:
        found.add("setup", "python3 -m pip install -e . --group dev", "dev group")
    else:
        found.add("setup", "python3 -m pip install -e .", "editable install")


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _tox(repo: Path) -> _Found | None:
    text = _text(repo, "tox.ini")
    if text is None:
        return None
    found = _Found("tox.ini")
    found.add("test", "tox", "tox")
    if re.search(r"^\[testenv:lint\]", text, re.MULTILINE):
        found.add("lint", "tox -e lint", "env lint")
    return found


def _nox(repo: Path) -> _Found | None:
    text = _text(repo, "noxfile.py")
    if text is None:
        return None
    sessions = set()
    for match in NOX_SESSION.finditer(text):
        named = re.search(r"name\s*=\s*['\"]([\w-]+)['\"]", match["args"] or "")
        sessions.add(named[1] if named else match["name"])
    found = _Found("noxfile.py")
    test = next((name for name in ("tests", "test") if name in sessions), None)
    found.add("test", f"nox -s {test}" if test else "nox", f"session {test}" if test else "nox")
    if "lint" in sessions:
        found.add("lint", "nox -s lint", "session lint")
    return found
