"""Choosing among the sources' candidates: per check step the most trusted source's
commands; per ecosystem every install (the CI's first, a CI job's only with its checks),
with the tools the chosen checks run added (Python's to the venv, pnpm and yarn by npm);
and each ecosystem's cache, keys, registries and environment."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from golem.checks.contracts import CHECK_STEPS, STEPS, DetectedCommand, RepoConventions, Step
from golem.checks.detect.defaults import dependencies_of
from golem.checks.detect.ecosystem import VENV, Dependencies, node_tools_dependencies, path_env
from golem.checks.detect.found import Candidate, Dropped, RepoFiles
from golem.checks.detect.keys import install_keys
from golem.checks.detect.nodetools import MANAGERS, manager_installs
from golem.checks.detect.pydeps import declared_names, requirement_name
from golem.checks.detect.python import MAKE_VENV, PIP_INSTALL, VENV_WHY, PythonFacts
from golem.core import GOLEM_HOME

__all__ = ["NOTHING_FOUND", "check_jobs", "checks_served", "merge"]

NOTHING_FOUND = (
    "no commands found: no .golem.toml, and no CI workflow, task runner or ecosystem default "
    "names lint, build or test"
)

PYTHON_TOOLS = frozenset(
    {
        "pytest",
        "ruff",
        "mypy",
        "flake8",
        "pylint",
        "black",
        "isort",
        "pre-commit",
        "tox",
        "nox",
        "pyright",
        "codespell",
        "coverage",
        "dmypy",
    }
)
CD_PREFIX = re.compile(r"^cd \S+ && ")
WARMUPS: dict[str, tuple[str, Dependencies]] = {
    "pre-commit": (
        f"{VENV}/bin/pre-commit install-hooks",
        Dependencies(
            "pre-commit",
            cache=[f"{GOLEM_HOME}/pre-commit"],
            keys=[".pre-commit-config.yaml"],
            registries=["github.com", "pypi.org", "files.pythonhosted.org", "registry.npmjs.org"],
            env={"PRE_COMMIT_HOME": f"{GOLEM_HOME}/pre-commit"},
        ),
    ),
    "pyright": (
        f"{VENV}/bin/pyright --version",
        Dependencies(
            "pyright",
            cache=[f"{GOLEM_HOME}/pyright"],
            registries=["registry.npmjs.org"],
            env={"PYRIGHT_PYTHON_CACHE_DIR": f"{GOLEM_HOME}/pyright"},
        ),
    ),
}
"""Python tools that fetch more on their first run (pre-commit its hooks, pyright its npm
package): the install runs them once, where the fetched part is kept."""


def checks_served(command: str, checks: list[str]) -> list[str] | None:
    """The checks an install command prepares alone: a tool's first run that fetches more
    (``pre-commit install-hooks``, ``pyright --version``) or a pip install of the tools the
    checks run serves the checks that run those tools; None: it serves every check (the
    repository's own install). A failing install of the first kind drops only its checks."""
    tool = _tool_of(command).rsplit("/", 1)[-1]
    if tool in WARMUPS:
        tools = {tool}
    else:
        words = _words(command)
        at = next((i for i in range(len(words) - 1) if words[i : i + 2] == ["pip", "install"]), -1)
        named = [requirement_name(word) for word in words[at + 2 :]] if at >= 0 else []
        if not named or not all(name in PYTHON_TOOLS for name in named):
            return None
        tools = set(named)
    return [check for check in checks if _tool_of(check).rsplit("/", 1)[-1] in tools]


def merge(
    files: RepoFiles,
    facts: PythonFacts,
    ecosystems: list[str],
    candidates: list[Candidate],
    dropped: list[tuple[Dropped, Step]],
) -> RepoConventions:
    """The conventions the candidates make."""
    findings: list[DetectedCommand] = []
    steps = {step: _choose(step, candidates, findings) for step in CHECK_STEPS}
    install = _installs(ecosystems, candidates, check_jobs(candidates, steps), findings)
    checks = [command for step in CHECK_STEPS for command in steps[step]]
    install += _tool_installs(checks, install, facts, findings)
    install = _manager_installs(files, install, checks, candidates, findings)
    if MAKE_VENV in install and "python" not in ecosystems:  # only for the checks' tools
        ecosystems = ["python", *ecosystems]
    deps = _dependencies(files, facts, ecosystems, candidates, install, checks)
    findings += [
        DetectedCommand(
            step=step, command=drop.command, origin=drop.origin, why=drop.why, used=False
        )
        for drop, step in dropped
    ]
    findings.sort(key=lambda finding: (not finding.used, STEPS.index(finding.step)))
    return RepoConventions(
        install=install,
        **steps,
        cache=_union(d.cache for d in deps),
        cache_keys=[
            key
            for key in _union([*(d.keys for d in deps), install_keys(install)])
            if files.exists(key)
        ],
        registries=_union(d.registries for d in deps),
        env={**{key: value for d in deps for key, value in d.env.items()}, **path_env(deps)},
        ecosystems=ecosystems,
        findings=findings,
        source=_source(findings),
    )


def _dependencies(
    files: RepoFiles,
    facts: PythonFacts,
    ecosystems: list[str],
    candidates: list[Candidate],
    install: list[str],
    checks: list[str],
) -> list[Dependencies]:
    """What each ecosystem that installs something needs (caches, keys, registries, env)."""
    venv = MAKE_VENV in install
    installing = {c.ecosystem for c in candidates if c.step == "install" and c.command in install}
    deps = [
        dep
        for ecosystem in ecosystems
        if ecosystem in installing or (ecosystem == "python" and venv)
        for dep in dependencies_of(
            ecosystem, files, facts, _directories(ecosystem, candidates), venv
        )
    ]
    run = {_tool_of(command) for command in checks}
    deps += [dependencies for tool, (_, dependencies) in WARMUPS.items() if tool in run]
    if any(command.startswith(tuple(f"command -v {m} " for m in MANAGERS)) for command in install):
        deps.append(node_tools_dependencies())
    return deps


def _choose(step: Step, candidates: list[Candidate], findings: list[DetectedCommand]) -> list[str]:
    mine = [c for c in candidates if c.step == step]
    if not mine:
        return []
    best = min(c.trust for c in mine)
    chosen: list[str] = []
    winner = next(c.origin for c in mine if c.trust == best)
    for candidate in mine:
        used = candidate.trust == best and candidate.command not in chosen
        if used:
            chosen.append(candidate.command)
        why = candidate.why if used else f"{candidate.why}; not used: {winner} names the {step}"
        findings.append(_finding(candidate, used, why))
    return chosen


def check_jobs(candidates: list[Candidate], steps: dict[Step, list[str]]) -> set[str]:
    """The CI jobs the chosen checks come from (the first job naming each command)."""
    jobs: set[str] = set()
    for step, commands in steps.items():
        for command in commands:
            first = next(c for c in candidates if c.step == step and c.command == command)
            jobs.add(first.job)
    return jobs - {""}


def _installs(
    ecosystems: list[str],
    candidates: list[Candidate],
    jobs: set[str],
    findings: list[DetectedCommand],
) -> list[str]:
    """Each ecosystem's installs, the most trusted first; a CI job's only when a chosen
    check comes from that job (a job testing an old dependency installs it)."""
    chosen: list[str] = []
    for ecosystem in ecosystems:
        mine = [c for c in candidates if c.step == "install" and c.ecosystem == ecosystem]
        if ecosystem == "python" and mine and all(c.command != MAKE_VENV for c in mine):
            mine.insert(0, Candidate("install", MAKE_VENV, "golem", VENV_WHY, 0, "python"))
        mine.sort(key=lambda c: (c.command != MAKE_VENV, c.trust))
        for candidate in mine:
            why = candidate.why
            if candidate.job and candidate.job not in jobs:
                why += "; not used: none of the chosen checks comes from this job"
            elif candidate.command in chosen:
                why += "; already installed"
            else:
                chosen.append(candidate.command)
            findings.append(_finding(candidate, why == candidate.why, why))
    return chosen


def _tool_installs(
    checks: list[str], install: list[str], facts: PythonFacts, findings: list[DetectedCommand]
) -> list[str]:
    """A pip install of the Python tools the checks run that no install names, and a
    first run of those that fetch more then (``WARMUPS``)."""
    named = {requirement_name(word) for command in install for word in _words(command)}
    named |= {name for key in install_keys(install) for name in declared_names(facts.files, key)}
    wanted = [
        tool
        for tool in dict.fromkeys(_tool_of(check) for check in checks)
        if tool in PYTHON_TOOLS and tool not in named and not facts.project.installs(tool)
    ]
    commands = [f"{PIP_INSTALL} {shlex.join(wanted)}"] if wanted else []
    run = {_tool_of(check) for check in checks}
    warmed = [tool for tool in WARMUPS if tool in run]
    commands += [WARMUPS[tool][0] for tool in warmed]
    if commands and MAKE_VENV not in install:
        commands.insert(0, MAKE_VENV)
    why = f"the checks run {', '.join(dict.fromkeys(wanted + warmed))}"
    findings += [
        DetectedCommand(step="install", command=command, origin="golem", why=why)
        for command in commands
    ]
    return commands


def _manager_installs(
    files: RepoFiles,
    install: list[str],
    checks: list[str],
    candidates: list[Candidate],
    findings: list[DetectedCommand],
) -> list[str]:
    """``install`` with pnpm or yarn installed first when a command runs them."""
    used = {_tool_of(command) for command in [*install, *checks]} & set(MANAGERS)
    directory = next(iter(_directories("node", candidates)), "")
    bootstrap = manager_installs(files, used, directory)
    findings += [
        DetectedCommand(step="install", command=command, origin="golem", why=why)
        for command, why in bootstrap
    ]
    first = next((i for i, c in enumerate(install) if _tool_of(c) in MANAGERS), len(install))
    return [*install[:first], *(command for command, _ in bootstrap), *install[first:]]


def _tool_of(command: str) -> str:
    """The program a check runs (``python3 -m X``: X), after any ``cd dir &&``."""
    words = _words(CD_PREFIX.sub("", command))
    if words[:2] == ["python3", "-m"] and len(words) > 2:
        return words[2]
    return words[0] if words else ""


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _finding(candidate: Candidate, used: bool, why: str) -> DetectedCommand:
    return DetectedCommand(
        step=candidate.step, command=candidate.command, origin=candidate.origin, why=why, used=used
    )


def _directories(ecosystem: str, candidates: list[Candidate]) -> list[str]:
    return list(
        dict.fromkeys(
            c.directory for c in candidates if c.step == "install" and c.ecosystem == ecosystem
        )
    )


def _union(lists: Iterable[list[str]]) -> list[str]:
    found: list[str] = []
    for items in lists:
        found += [item for item in items if item not in found]
    return found


def _source(findings: list[DetectedCommand]) -> str:
    used = [f for f in findings if f.used and f.step in CHECK_STEPS]
    if not used:
        return NOTHING_FOUND
    origins: dict[str, list[str]] = {}
    for finding in used:
        origins.setdefault(finding.origin, []).append(finding.step)
    parts = [f"{origin} ({', '.join(dict.fromkeys(steps))})" for origin, steps in origins.items()]
    return "detected: " + "; ".join(parts)
