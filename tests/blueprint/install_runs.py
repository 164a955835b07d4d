"""Whole runs for install tests: a Python fixture repository (examples/calculator with a
requirements.txt and a test of the dependency it names), conventions that install it into a
virtual environment from the local registries (tests/blueprint/registries.py), and a run of
a blueprint on a repository whose conventions are given (as a ``.golem.toml`` or detection
would give them)."""

from __future__ import annotations

import shutil
from pathlib import Path

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.context import RepoConventions
from golem.core import GolemConfig
from golem.sandbox import Engine
from golem.sandbox.backends.process.bwrap import BOX_PATH
from golem.store import Store
from tests.blueprint.registries import PYPI, LocalRegistries
from tests.blueprint.repos import EXAMPLES, git

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
TASK = "Fix the failing tests of the calculator"
DEPENDENCY_TEST = """\
import unittest

import golemdemo


class DependencyTest(unittest.TestCase):
    def test_the_installed_package_is_there(self) -> None:
        self.assertEqual(golemdemo.VALUE, 42)
"""


def python_repo(parent: Path, name: str = "calculator") -> Path:
    """A bare remote: the calculator, a requirements.txt and a test of the dependency."""
    work = parent / f"{name}-seed"
    shutil.copytree(EXAMPLES / "calculator", work)
    (work / ".golem.toml").unlink()
    (work / "requirements.txt").write_text("golemdemo==1.0\n")
    (work / "test_dependency.py").write_text(DEPENDENCY_TEST)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "seed", cwd=work)
    remote = parent / f"{name}.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    git("remote", "add", "origin", str(remote), cwd=work)
    return remote


def change_on_main(remote: Path, path: str, text: str) -> None:
    """A new commit on the remote's main branch that writes ``path``."""
    work = remote.parent / remote.name.replace(".git", "-seed")
    (work / path).write_text(text)
    git("commit", "-q", "-am", f"change {path}", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)


def python_conventions(local: LocalRegistries, **changes: object) -> RepoConventions:
    """Install into /workspace/.venv from ``local``'s simple index (``changes``: fields
    to set instead)."""
    fields: dict[str, object] = {
        "install": [
            "python3 -m venv .venv",
            ".venv/bin/python -m pip install -q -r requirements.txt",
        ],
        "test": ["python3 -m unittest -v"],
        "cache": [".venv"],
        "cache_keys": ["requirements.txt"],
        "registries": [PYPI],
        "env": {
            "PATH": f"/workspace/.venv/bin:{BOX_PATH}",
            "VIRTUAL_ENV": "/workspace/.venv",
            "PIP_INDEX_URL": local.pypi_url,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_TRUSTED_HOST": "pypi.test",
        },
        "ecosystems": ["python"],
        "source": "the test's conventions",
    }
    return RepoConventions.model_validate(fields | changes)


async def run(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    remote: Path,
    conventions: RepoConventions,
    model: str = FIX,
    blueprint: str = "minion",
) -> RunState:
    """A whole run of ``blueprint`` whose repository has ``conventions`` (as a
    ``.golem.toml`` or detection would give them)."""
    runner = Runner(config, engine=engine, store=store)
    request = RunRequest(repo=str(remote), task=TASK, model=model, blueprint=blueprint)
    submitted = await runner.submit(request)
    book = RunBook(store)
    state = await book.load(submitted.id)
    assert state is not None
    state.conventions = conventions
    await book.save(state)
    return await runner.run(state.id)
