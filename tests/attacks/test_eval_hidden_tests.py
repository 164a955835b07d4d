"""The agent of a `golem eval` attempt never sees the hidden tests, nor the future of the
repository they came from: an agent that looks everywhere it can (every ref and object of
its checkout's git, every file of its box) finds neither the hidden test nor a later
commit, though the repository the task was made from holds both; the tests exist all the
same: they are laid over its work once its run has ended, and judge it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from golem.blueprint import RunBook
from golem.core import load_config
from golem.eval import EvalSettings, EvalTask, Evaluation, ResultsDir, write_tasks
from golem.sandbox import LocalEngine
from golem.store import SqlStore
from tests.acceptance.ecosystems import fixes_remote, git

pytestmark = pytest.mark.bwrap

LOOK = (
    "git log --all --format='LOG %s'; git for-each-ref --format='REF %(refname)'; "
    "echo OBJECTS=$(git cat-file --batch-all-objects --batch 2>/dev/null "
    "| grep -c 'def test_emp''ty'); "
    "echo FILES=$(grep -rl 'def test_emp''ty' /workspace /tmp ~ 2>/dev/null | wc -l)"
)
"""Every ref and object of its git, every file it or golem wrote in the box; the hidden
test's name spelled apart (so the command itself never holds it)."""


def explorer(directory: Path) -> str:
    turns = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": LOOK}}]},
        *({"tool_calls": [{"name": "finish", "arguments": {"summary": "looked"}}]},) * 4,
    ]
    script = directory / "explorer.yaml"
    script.write_text(yaml.safe_dump({"model": "explorer", "turns": turns}))
    return f"scripted:{script}"


async def test_an_agent_that_looks_everywhere_finds_neither_the_hidden_tests_nor_the_future(
    reachable_dir: Path,
) -> None:
    remote = fixes_remote(reachable_dir)
    base, fixed = git("rev-list", "--reverse", "main", cwd=remote).split()[:2]
    task = EvalTask(
        instance_id="fixes-words", repo=str(remote), base_commit=base, golem_remote=str(remote),
        patch=git("diff", base, fixed, "--", "textstats.py", cwd=remote),
        test_patch=git("diff", base, fixed, "--", "test_words.py", cwd=remote),
        problem_statement="count_words('') should be 0",
        FAIL_TO_PASS=["test_words.CountWords.test_empty"],
        golem_test_commands=["python3 -m unittest discover -v"],
    )  # fmt: skip
    tasks = reachable_dir / "tasks.jsonl"
    write_tasks(tasks, [task])
    config = load_config({"state_dir": str(reachable_dir / "state")}, files=[])
    results = ResultsDir(reachable_dir / "out")
    settings = results.begin(
        EvalSettings(
            tasks=str(tasks), tasks_sha256=ResultsDir.digest(tasks),
            model=explorer(reachable_dir), blueprint="minion", attempts=1, budget_usd=None,
            golem_version="test",
        )
    )  # fmt: skip
    store = await SqlStore.open(config)
    try:
        async with LocalEngine(config) as engine:
            [attempt] = await Evaluation(config, engine, store, [task], results, settings,
                                         parallel=1, repo_url="{repo}").run()  # fmt: skip
        assert attempt.run_id is not None
        state = await RunBook(store).load(attempt.run_id)
    finally:
        await store.close()
    assert state is not None
    seen = "".join(Path(t).read_text() for t in state.trajectories)
    assert "OBJECTS=0" in seen
    assert "FILES=0" in seen
    assert "LOG textstats: count words, lines and initials" in seen  # it did look
    assert "LOG count_words" not in seen  # no later commit
    assert "LOG docs:" not in seen
    assert seen.count("REF refs/") == seen.count("REF refs/heads/") + seen.count(
        "REF refs/remotes/origin/"
    )  # fmt: skip
    assert attempt.score is not None  # yet the hidden test judged its work
    assert attempt.score.fail_to_pass == {"test_words.CountWords.test_empty": "failed"}
    assert attempt.resolved is False
