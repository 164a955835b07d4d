"""Small repositories and scripted agents for the verification tests: each repository a
bare remote with one commit on main, built from a dict of files."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.blueprint.repos import git

GREET = '''"""Greetings."""


def greet(name: str) -> str:
    return "Hello, " + name
'''
GREET_TESTS = """import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_greet(self) -> None:
        self.assertEqual(greet("Ada"), "Hello, Ada")


if __name__ == "__main__":
    unittest.main()
"""
UNITTEST = "python3 -m unittest -v"


def golem_toml(**commands: str) -> str:
    """A .golem.toml naming ``commands`` (setup, lint, build, test)."""
    lines = [f"{step} = {json.dumps(command)}" for step, command in commands.items()]
    return "[commands]\n" + "\n".join(lines) + "\n"


def greeter(**commands: str) -> dict[str, str]:
    """A repository whose tests pass on main, checked by its tests and ``commands``."""
    return {
        "greet.py": GREET,
        "test_greet.py": GREET_TESTS,
        ".golem.toml": golem_toml(**{"test": UNITTEST, **commands}),
    }


def make_repo(parent: Path, name: str, files: dict[str, str]) -> Path:
    """A bare repository holding ``files`` on main."""
    work = parent / f"{name}-seed"
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "seed", cwd=work)
    remote = parent / f"{name}.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    return remote


def scripted(parent: Path, name: str, *calls: dict[str, object], rounds: int = 2) -> str:
    """A scripted model: ``calls`` (tool calls, one turn each), then finish; each later fix
    round (``rounds`` of them) only finishes."""
    finish = {"tool_calls": [{"name": "finish", "arguments": {"summary": "done"}}]}
    turns = [{"tool_calls": [call]} for call in calls] + [finish] * (1 + rounds)
    path = parent / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"model": name, "turns": turns}))
    return f"scripted:{path}"


def write(path: str, content: str) -> dict[str, object]:
    """The agent's write tool call."""
    return {"name": "write", "arguments": {"path": path, "content": content}}


def bash(command: str) -> dict[str, object]:
    """The agent's bash tool call."""
    return {"name": "bash", "arguments": {"command": command}}
