"""No unverified success, whole runs in real boxes with scripted agents and the local
forge: tests that fail as on the base commit verify nothing whatever lint says; a test
command that ran no test verifies nothing; a blueprint with no verify loop ships a draft
labelled unverified; what a check creates (its report) never ships."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.core import GolemConfig
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.blueprint.repos import git
from tests.blueprint.verify_repos import (
    GREET_TESTS,
    bash,
    greeter,
    make_repo,
    scripted,
    write,
)

pytestmark = pytest.mark.bwrap


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


async def run(
    config: GolemConfig, engine: Engine, store: Store, remote: Path, model: str, **fields: object
) -> RunState:
    runner = Runner(config, engine=engine, store=store)
    request = {"repo": str(remote), "task": "Greet warmly", "model": model, **fields}
    return await runner.start(RunRequest.model_validate(request))


async def the_pr(store: Store) -> PullRequest:
    [pr] = await LocalForge(store).pull_requests()
    return pr


async def test_tests_failing_as_on_the_base_leave_a_change_unverified_though_lint_passes(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path, tmp_path: Path
) -> None:
    files = greeter(lint="python3 -c pass")
    files["test_greet.py"] = GREET_TESTS.replace('"Hello, Ada"', '"Hello, dear Ada"')
    remote = make_repo(reachable_dir, "greeter", files)
    no_op = scripted(tmp_path, "no-op", write("notes.txt", "looked at it\n"))
    state = await run(config, engine, store, remote, no_op)
    assert state.status == "unverified", state.error
    [lint, test] = state.checks
    assert (lint.passed, test.passed, test.preexisting) == (True, False, True)
    assert state.unverified is not None
    assert state.unverified.startswith("the tests fail on the base commit too, the same way")
    pr = await the_pr(store)
    assert pr.draft
    assert "unverified" in pr.labels


NO_LOOP = """name: no-loop
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - {id: implement, kind: agent, prompt: "{{ task }}", tools: [all], next: check}
  - {id: check, kind: box, check: test, next: ship}
  - {id: ship, kind: host, action: ship, next: end}
"""


async def test_a_blueprint_without_a_verify_loop_ships_a_labelled_draft(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path, tmp_path: Path
) -> None:
    remote = make_repo(reachable_dir, "notes", {"README.md": "Notes.\n"})  # no test command
    blueprint = tmp_path / "no-loop.yaml"
    blueprint.write_text(NO_LOOP)
    model = scripted(tmp_path, "notes", write("README.md", "Notes!\n"))
    state = await run(config, engine, store, remote, model, blueprint=str(blueprint))
    assert state.status == "unverified", state.error
    assert state.unverified is not None
    assert state.unverified.startswith("this blueprint ran no check that verified the change")
    pr = await the_pr(store)
    assert (pr.draft, "unverified" in pr.labels) == (True, True)


PYTEST_STYLE = (
    'from greet import greet\n\n\ndef test_greet():\n    assert greet("Ada") == "Hello, Ada"\n'
)


async def test_a_test_command_that_runs_no_test_verifies_nothing(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path, tmp_path: Path
) -> None:
    files = greeter(test="python3 -m unittest discover")
    files["test_greet.py"] = PYTEST_STYLE  # unittest finds no TestCase: "Ran 0 tests ... OK"
    remote = make_repo(reachable_dir, "greeter", files)
    wrong = scripted(tmp_path, "wrong", bash("sed -i 's/Hello, /Hi, /' greet.py"))
    state = await run(config, engine, store, remote, wrong)
    assert state.status == "unverified", state.error
    [test] = state.checks
    assert (test.passed, test.preexisting) == (False, True)
    assert test.reason is not None
    assert test.reason.startswith("ran no tests: unittest found no test")
    assert state.unverified is not None
    assert state.unverified.startswith("the tests fail on the base commit too")


REPORTING = (
    "python3 -m unittest -v; s=$?; date +%s%N > report.xml; mkdir -p cov; date +%N > cov/x; exit $s"
)


async def test_what_a_check_creates_is_its_artifact_never_a_change_and_never_shipped(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path, tmp_path: Path
) -> None:
    remote = make_repo(reachable_dir, "greeter", greeter(test=REPORTING))  # a new report each run
    model = scripted(tmp_path, "warm", bash("sed -i 's/name$/name  # warmly/' greet.py"))
    state = await run(config, engine, store, remote, model)
    assert state.status == "succeeded", state.error
    assert state.rounds == 0
    pr = await the_pr(store)
    assert "report.xml" not in pr.diff
    assert "# warmly" in pr.diff
    shipped = git("ls-tree", "-r", "--name-only", state.branch, cwd=remote).split()
    assert sorted(shipped) == [".golem.toml", "greet.py", "test_greet.py"]


CI = """import sys, time, unittest
path = sys.argv[1].split("=", 1)[1]
ok = unittest.main(module=None, argv=["ci", "discover"], exit=False).result.wasSuccessful()
open(path, "w").write(f"<testsuite time='{time.time_ns()}'/>")
sys.exit(0 if ok else 1)
"""


async def test_a_report_the_agent_left_by_running_the_tests_is_not_shipped(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path, tmp_path: Path
) -> None:
    test = "python3 ci.py --junitxml=report.xml"
    remote = make_repo(reachable_dir, "greeter", {**greeter(test=test), "ci.py": CI})
    edit = bash("sed -i 's/name$/name  # warmly/' greet.py")
    model = scripted(tmp_path, "warm", edit, bash(test))  # it runs the tests, as told to
    state = await run(config, engine, store, remote, model)
    assert state.status == "succeeded", state.error
    assert state.rounds == 0
    pr = await the_pr(store)
    assert "report.xml" not in pr.diff
    assert "# warmly" in pr.diff
