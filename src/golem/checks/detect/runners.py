"""Task runners: Makefile and justfile targets, ``package.json`` scripts, pre-commit, tox
and nox. tox and nox build their own environments when they run, which needs a network the
checks do not have, so they come after everything else."""

from __future__ import annotations

import re

from golem.checks.contracts import Step
from golem.checks.detect.classify import autofix, recipe_commands
from golem.checks.detect.ecosystem import NODE_LOCKS
from golem.checks.detect.found import TRUST_LAST, Candidate, RepoFiles, table
from golem.checks.detect.python import PythonFacts
from golem.checks.detect.recipes import JUSTFILES, MAKEFILES, runner_recipe
from golem.checks.detect.toxdeps import tox_commands

__all__ = ["node_manager", "read_runners"]

MAKE_TARGET = re.compile(r"^([^\s:#=.][^:#=]*?)\s*::?(?!=)", re.MULTILINE)
JUST_RECIPE = re.compile(r"^@?([A-Za-z_][\w-]*)(?:\s+[^:=]*)?:(?!=)", re.MULTILINE)
NOX_SESSION = re.compile(
    r"@(?:nox\.)?session\b(?:\((?P<args>[^)]*)\))?\s*\n\s*def\s+(?P<name>\w+)", re.MULTILINE
)
NPM_PLACEHOLDER = "no test specified"
TARGETS: tuple[tuple[Step, tuple[str, ...]], ...] = (
    ("lint", ("lint", "typecheck")),
    ("build", ("build",)),
    ("test", ("test", "tests", "check")),
)
SCRIPTS: tuple[tuple[Step, tuple[str, ...]], ...] = (
    ("lint", ("lint", "typecheck", "type-check", "check-types")),
    ("build", ("build",)),
)
MAKE_TRUST, JUST_TRUST, NODE_TRUST, PRECOMMIT_TRUST, TOX_TRUST = 2.0, 2.1, 2.2, 2.3, 2.4


def read_runners(files: RepoFiles, facts: PythonFacts) -> list[Candidate]:
    """Every task runner's candidates, most trusted first."""
    return [
        *_targets(files, facts, MAKEFILES, MAKE_TARGET, "make", MAKE_TRUST),
        *_targets(files, facts, JUSTFILES, JUST_RECIPE, "just", JUST_TRUST),
        *_package_json(files),
        *_pre_commit(files),
        *_tox(files, facts),
        *_nox(files),
    ]


def node_manager(files: RepoFiles, directory: str = "") -> tuple[str, str, str | None]:
    """(manager, install command, lockfile) by the lockfile in ``directory``."""
    prefix = f"{directory}/" if directory else ""
    for lockfile, (manager, install) in NODE_LOCKS.items():
        if files.exists(prefix + lockfile):
            return manager, install, lockfile
    return "npm", "npm install", None


def _targets(
    files: RepoFiles,
    facts: PythonFacts,
    names: tuple[str, ...],
    pattern: re.Pattern[str],
    tool: str,
    trust: float,
) -> list[Candidate]:
    for name in names:
        text = files.text(name)
        if text is None:
            continue
        targets = {target for match in pattern.finditer(text) for target in match[1].split()}
        found: list[Candidate] = []
        for step, wanted in TARGETS:
            target = next((t for t in wanted if t in targets), None)
            if target is None:
                continue
            recipe = runner_recipe(files, tool, target)
            read = recipe_commands(recipe, f"target {target}", facts) if recipe else None
            commands = read.commands if read is not None and read.step else (f"{tool} {target}",)
            why = read.why if read is not None and read.step else f"target {target}"
            found += [Candidate(step, command, name, why, trust) for command in commands]
        return found
    return []


def _package_json(files: RepoFiles) -> list[Candidate]:
    scripts = table(files.json("package.json"), "scripts")
    manager = node_manager(files)[0]
    found: list[Candidate] = []
    for step, names in SCRIPTS:
        for name in names:
            body = scripts.get(name)
            if isinstance(body, str) and not _writes_fixes(body):
                run = f"{manager} run {name}"
                found.append(Candidate(step, run, "package.json", f"script {name}", NODE_TRUST))
    test = scripts.get("test")
    if isinstance(test, str) and NPM_PLACEHOLDER not in test:
        found.append(
            Candidate("test", f"{manager} test", "package.json", "script test", NODE_TRUST)
        )
    return found


def _writes_fixes(body: str) -> bool:
    """Whether a script runs an autofix (``eslint . --fix``): never a check."""
    parts = re.split(r"&&|\|\||;", body)
    return any(autofix(part.split()) for part in parts if part.strip())


def _pre_commit(files: RepoFiles) -> list[Candidate]:
    config = files.yaml(".pre-commit-config.yaml")
    if not isinstance(config, dict) or not config.get("repos"):
        return []
    why = "hooks of .pre-commit-config.yaml"
    return [
        Candidate(
            "lint", "pre-commit run --all-files", ".pre-commit-config.yaml", why, PRECOMMIT_TRUST
        )
    ]


def _tox(files: RepoFiles, facts: PythonFacts) -> list[Candidate]:
    text = files.text("tox.ini")
    if text is None:
        return []
    found = _tox_env_commands(files, facts, "test", "")
    found += _tox_env_commands(files, facts, "lint", "lint")
    why = "tox (builds its own environments)"
    found.append(Candidate("test", "tox", "tox.ini", why, TRUST_LAST))
    if re.search(r"^\[testenv:lint\]", text, re.MULTILINE):
        found.append(Candidate("lint", "tox -e lint", "tox.ini", "env lint", TRUST_LAST))
    return found


def _tox_env_commands(
    files: RepoFiles, facts: PythonFacts, step: Step, env: str
) -> list[Candidate]:
    """A tox environment's own commands, run from the venv (its deps are installed there)."""
    lines = tox_commands(files, env)
    name = f"[testenv{':' + env if env else ''}] commands"
    read = recipe_commands(lines, name, facts, "run from the venv") if lines else None
    if read is None or read.step is None:
        return []
    return [Candidate(step, command, "tox.ini", read.why, TOX_TRUST) for command in read.commands]


def _nox(files: RepoFiles) -> list[Candidate]:
    text = files.text("noxfile.py")
    if text is None:
        return []
    sessions = set()
    for match in NOX_SESSION.finditer(text):
        named = re.search(r"name\s*=\s*['\"]([\w-]+)['\"]", match["args"] or "")
        sessions.add(named[1] if named else match["name"])
    test = next((name for name in ("tests", "test") if name in sessions), None)
    found = [
        Candidate(
            "test",
            f"nox -s {test}" if test else "nox",
            "noxfile.py",
            f"session {test or 'default'}",
            TRUST_LAST,
        )
    ]
    if "lint" in sessions:
        found.append(Candidate("lint", "nox -s lint", "noxfile.py", "session lint", TRUST_LAST))
    return found
