"""What nox's test session installs, read from ``noxfile.py``'s syntax tree (parsed,
never run): the literal arguments of its ``session.install(...)`` calls."""

from __future__ import annotations

import ast
import re

from golem.checks.detect.found import RepoFiles

__all__ = ["nox_requirements"]

TEST_SESSIONS = frozenset({"tests", "test", "unit", "unittests", "pytest"})
EXTRAS = re.compile(r"^\.\[([\w,\s-]+)\]$")


def nox_requirements(files: RepoFiles) -> tuple[list[str], list[str], list[str]]:
    """(requirements, requirements files, extras) the test session installs."""
    text = files.text("noxfile.py")
    try:
        tree = ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError):
        return [], [], []
    arguments = [
        argument
        for node in (tree.body if tree is not None else [])
        if isinstance(node, ast.FunctionDef) and _session_name(node) in TEST_SESSIONS
        for argument in _installs(node)
    ]
    return _sorted(files, arguments)


def _session_name(function: ast.FunctionDef) -> str:
    for decorator in function.decorator_list:
        for keyword in decorator.keywords if isinstance(decorator, ast.Call) else []:
            if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                return str(keyword.value.value)
    return function.name


def _installs(function: ast.FunctionDef) -> list[str]:
    found: list[str] = []
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "install"
        ):
            found += [
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ]
    return found


def _sorted(files: RepoFiles, arguments: list[str]) -> tuple[list[str], list[str], list[str]]:
    requirements: list[str] = []
    requirement_files: list[str] = []
    extras: list[str] = []
    following = ""
    for argument in arguments:
        named_extras = EXTRAS.match(argument)
        if following == "-r" and files.exists(argument):
            requirement_files.append(argument)
        elif named_extras:
            extras += [name.strip() for name in named_extras[1].split(",")]
        elif not argument.startswith(("-", ".")) and following != "-r":
            requirements.append(argument)
        following = argument
    return requirements, requirement_files, extras
