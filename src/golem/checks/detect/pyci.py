"""A CI's Python install commands in the box's form: into golem's venv, never the
system Python; ``--group`` and ``uv sync``/``poetry install``/``pdm install`` expanded into
plain pip arguments, since the box's pip may be older than the CI's tools."""

from __future__ import annotations

import shlex

from golem.checks.detect.found import table
from golem.checks.detect.pydeps import group_requirements, requirement_name
from golem.checks.detect.python import PIP_INSTALL, PythonFacts

__all__ = ["PYTHON_RUNNERS", "installer_only", "translate_python_install"]

SYSTEM_FLAGS = frozenset({"--user", "--system", "--break-system-packages"})
INSTALLER_TOOLS = frozenset({"pip", "setuptools", "wheel", "uv", "build", "virtualenv"})
PYTHON_RUNNERS = {
    ("uv", "run"),
    ("poetry", "run"),
    ("pdm", "run"),
    ("pipenv", "run"),
    ("rye", "run"),
}
"""Prefixes that run a command in the project's environment: the venv is first on PATH."""
UV_RUN_VALUES = frozenset(
    {"--with", "--extra", "--group", "--python", "-p", "--package", "--env-file"}
)


def translate_python_install(words: list[str], facts: PythonFacts) -> list[str] | None:
    """pip's arguments for a CI's Python install (``words`` without the tool's own
    prefix, e.g. after ``pip``), or None when it is not one."""
    head = words[:2]
    if head[:1] == ["pip"] and words[1:2] == ["install"]:
        return _pip_arguments(words[2:], facts)
    if head == ["uv", "pip"] and words[2:3] == ["install"]:
        return _pip_arguments(words[3:], facts)
    if head == ["uv", "sync"]:
        return _uv_sync(words[2:], facts)
    if head in (["poetry", "install"], ["pdm", "install"], ["pdm", "sync"]):
        return _project(facts, facts.project.extras) + facts.project.group_requirements
    if head == ["pipx", "install"] or (head == ["uv", "tool"] and words[2:3] == ["install"]):
        tools = [word for word in words[2:] if not word.startswith("-") and word != "install"]
        return tools or None
    return None


def installer_only(arguments: list[str]) -> bool:
    """Whether an install only upgrades the installer itself (pip, setuptools, wheel)."""
    names = [requirement_name(word) for word in arguments if not word.startswith("-")]
    return bool(names) and all(name in INSTALLER_TOOLS for name in names)


def pip_command(arguments: list[str]) -> str:
    """The venv's pip installing ``arguments`` (from ``cwd``, where the CI runs it)."""
    return f"{PIP_INSTALL} {shlex.join(arguments)}"


def _pip_arguments(words: list[str], facts: PythonFacts) -> list[str]:
    groups = table(facts.files.toml("pyproject.toml"), "dependency-groups")
    arguments: list[str] = []
    rest = iter(words)
    for word in rest:
        if word in SYSTEM_FLAGS:
            continue
        if word == "--group" or word.startswith("--group="):
            name = word.partition("=")[2] or next(rest, "")
            arguments += group_requirements(groups, name.rpartition(":")[2])
            continue
        arguments.append(word)
    return arguments


def _uv_sync(words: list[str], facts: PythonFacts) -> list[str]:
    pyproject = facts.files.toml("pyproject.toml")
    declared = list(table(pyproject, "project", "optional-dependencies"))
    all_groups = list(table(pyproject, "dependency-groups"))
    extras: list[str] = []
    groups = ["dev"] if "dev" in all_groups else []
    rest = iter(words)
    for word in rest:
        if word in ("--extra", "--group", "--only-group"):
            value = next(rest, "")
            (extras if word == "--extra" else groups).append(value)
        elif word == "--all-extras":
            extras = declared
        elif word == "--all-groups":
            groups = all_groups
        elif word in ("--no-dev", "--no-default-groups"):
            groups = [group for group in groups if group != "dev"]
    requirements = [
        requirement
        for group in dict.fromkeys(groups)
        for requirement in group_requirements(table(pyproject, "dependency-groups"), group)
    ]
    return _project(facts, extras) + requirements


def _project(facts: PythonFacts, extras: list[str]) -> list[str]:
    if not facts.project.installable:
        return []
    return ["-e", f".[{','.join(extras)}]" if extras else "."]


def strip_runner(words: list[str]) -> list[str]:
    """``words`` without a leading ``uv run``-style prefix (and its options)."""
    if tuple(words[:2]) not in PYTHON_RUNNERS:
        return words
    rest = words[2:]
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in UV_RUN_VALUES and rest:
            rest.pop(0)
        if option == "--":
            break
    return rest


def hatch_script(words: list[str], facts: PythonFacts, depth: int = 0) -> list[str] | None:
    """The commands ``hatch run [env:]script args`` stands for, from
    ``[tool.hatch.envs.<env>.scripts]`` (a command that is not a script runs as itself)."""
    if len(words) < 3 or depth > 3:
        return None
    env, _, script = words[2].rpartition(":")
    scripts = table(
        facts.files.toml("pyproject.toml"), "tool", "hatch", "envs", env or "default", "scripts"
    )
    body = scripts.get(script)
    if body is None:
        return [shlex.join([script, *words[3:]])]
    lines = [body] if isinstance(body, str) else [line for line in body if isinstance(line, str)]
    resolved: list[str] = []
    for written in lines:
        line = _drop_args_placeholder(written)
        words_of = line.split()
        if words_of and words_of[0] in scripts and words_of[0] != script:
            resolved += (
                hatch_script(
                    ["hatch", "run", f"{env}:{words_of[0]}" if env else words_of[0]],
                    facts,
                    depth + 1,
                )
                or []
            )
        else:
            resolved.append(line)
    return resolved


def _drop_args_placeholder(line: str) -> str:
    while "{args" in line:
        start = line.index("{args")
        end = line.find("}", start)
        line = (
            line[:start]
            + (line[start + 6 : end] if line[start + 5 : start + 6] == ":" else "")
            + line[end + 1 :]
        )
    return " ".join(line.split())
