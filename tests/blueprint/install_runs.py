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
from golem.blueprint.events import CheckOutput
from golem.checks import RepoConventions
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge, PullRequest, PullRequestDraft
from golem.sandbox import Engine
from golem.sandbox.backends.process.bwrap import BOX_PATH
from golem.store import Store
from tests.blueprint.registries import PYPI, LocalRegistries
from tests.blueprint.repos import EXAMPLES, git
from tests.conftest import backend_settings

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
    blueprint: str | None = None,
    follow_up: int | None = None,
) -> RunState:
    """A whole run of ``blueprint`` (default: the request's, minion or follow-up) whose
    repository has ``conventions`` (as a ``.golem.toml`` or detection would give them);
    with ``follow_up``, a follow-up of that pull request of the local forge."""
    runner = Runner(config, engine=engine, store=store)
    asked: dict[str, object] = {"repo": str(remote), "model": model}
    asked |= {"blueprint": blueprint} if blueprint is not None else {}
    if follow_up is None:
        asked["task"] = TASK
    else:
        asked["follow_up"] = {"repo": str(remote), "number": follow_up, "request": "Tidy it."}
    request = RunRequest.model_validate(asked)
    submitted = await runner.submit(request)
    book = RunBook(store)
    state = await book.load(submitted.id)
    assert state is not None
    state.conventions = conventions
    await book.save(state)
    return await runner.run(state.id)


INSTALL_SH = """\
set -e
. scripts/lib.sh
mkdir -p .venv
echo "install.sh: base" > .venv/origin
lib_says >> .venv/origin
cat requirements.txt >> .venv/origin
where=data
cat "$where/$(echo flavour)" >> .venv/origin
"""
"""An install that reads its own script, one it sources, the lockfile, and a file through a
path it computes (which no key names): each line of ``.venv/origin`` comes from one."""
SCRIPT_FILES = {
    "install.sh": INSTALL_SH,
    "scripts/lib.sh": 'lib_says() { echo "lib.sh: base"; }\n',
    "data/flavour": "flavour: base\n",
    "docs/usage.md": "Run calculator.add(a, b).\n",
}
BASE_ORIGIN = "install.sh: base\nlib.sh: base\ngolemdemo==1.0\nflavour: base\n"
"""What ``.venv/origin`` holds when the install ran on the base branch's files."""

LOOK = """\
name: look
nodes:
  - {id: prepare, kind: host, action: prepare, next: install}
  - {id: install, kind: host, action: install, next: look}
  - {id: look, kind: box, run: ["cat .venv/origin"]}
"""
"""A blueprint that installs and shows what the run's box got (``seen``)."""


def script_install_repo(parent: Path) -> Path:
    """``python_repo`` whose install is ``sh install.sh`` (``SCRIPT_FILES``)."""
    remote = python_repo(parent)
    work = parent / "calculator-seed"
    for path, text in SCRIPT_FILES.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "install script", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    return remote


def script_conventions(**changes: object) -> RepoConventions:
    """``sh install.sh`` into ``.venv``, keyed (as detection would) by the lockfile."""
    fields: dict[str, object] = {
        "install": ["sh install.sh"],
        "test": ["python3 -m unittest -v test_calculator"],
        "cache": [".venv"],
        "cache_keys": ["requirements.txt"],
        "source": "the test's conventions",
    }
    return RepoConventions.model_validate(fields | changes)


def look_blueprint(directory: Path) -> str:
    path = directory / "look.yaml"
    path.write_text(LOOK)
    return str(path)


async def seen(store: Store, state: RunState) -> str:
    """What the ``look`` node of ``LOOK`` printed: ``.venv/origin`` in the run's box."""
    events = await RunBook(store).events(state.id)
    return "".join(e.text for _, e in events if isinstance(e, CheckOutput) and e.node == "look")


async def pull_request_changing(
    store: Store, remote: Path, path: str, old: str, new: str, branch: str = "golem/change"
) -> PullRequest:
    """A branch pushed by hand whose one commit replaces ``old`` by ``new`` in ``path``,
    and a pull request of the local forge for it (into main)."""
    work = remote.parent / f"by-hand-{branch.replace('/', '-')}"
    git("clone", "-q", str(remote), str(work), cwd=remote.parent)
    git("checkout", "-q", "-b", branch, cwd=work)
    text = (work / path).read_text()
    assert old in text
    (work / path).write_text(text.replace(old, new))
    git("commit", "-qam", f"change {path}", cwd=work)
    git("push", "-q", "origin", branch, cwd=work)
    draft = PullRequestDraft(
        repo=str(remote), base="main", head=branch, title=f"Change {path}", body="a change"
    )
    return await LocalForge(store).open_pull_request(draft)


def install_config(
    registries: LocalRegistries, state: Path, backend: str, **sections: object
) -> GolemConfig:
    """golem's configuration for an install test: its state in ``state``, packages from
    ``registries``, boxes of ``backend``, and ``sections`` (``prepared={...}``) on top."""
    data = registries.engine_config(state)
    settings = backend_settings(backend)
    if settings is not None:
        engine = data["engine"]
        assert isinstance(engine, dict)
        engine["backend"] = settings
    return load_config({**data, **sections}, files=[])
