"""A box node with ``fork: true`` tries something in a fork of the run's box and throws it
away: its output and result are the run's, its writes reach neither the run's box nor its
checkout, and the fork leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint.book import RunBook
from golem.blueprint.events import CheckFinished, CheckOutput
from golem.checks import RepoConventions
from golem.core import GolemConfig
from golem.sandbox import Engine, LocalEngine
from golem.store import SqlStore
from tests.blueprint.install_runs import python_repo, run

TRY_IN_FORK = """\
name: try-in-fork
nodes:
  - {id: prepare, kind: host, action: prepare, next: try}
  - id: try
    kind: box
    fork: true
    run:
      - "echo tried > tried.txt; rm calculator.py; echo trial > /tmp/trial; git status --short"
      - "exit 3"
    next: {success: after, failure: after}
  - id: after
    kind: box
    run:
      - "test ! -e tried.txt && test -f calculator.py && test ! -e /tmp/trial"
      - 'test -z "$(git status --short)"'
"""


@pytest.mark.bwrap
async def test_a_node_run_in_a_fork_is_recorded_and_thrown_away_leaving_the_run_box_untouched(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    blueprint = reachable_dir / "try.yaml"
    blueprint.write_text(TRY_IN_FORK)
    store = await SqlStore.open(config)
    try:
        remote = python_repo(reachable_dir)
        made = RepoConventions.model_validate({"source": "test"})
        state = await run(config, engine, store, remote, made, blueprint=str(blueprint))
        events = [event for _, event in await RunBook(store).events(state.id)]
    finally:
        await store.close()
    assert [(s.node, s.outcome) for s in state.steps] == [
        ("prepare", "success"),
        ("try", "failure"),
        ("after", "success"),
    ]
    output = "".join(e.text for e in events if isinstance(e, CheckOutput) and e.node == "try")
    assert "?? tried.txt" in output  # git worked in the fork
    assert " D calculator.py" in output
    finished = [(e.node, e.check.passed) for e in events if isinstance(e, CheckFinished)]
    assert finished == [("try", True), ("try", False), ("after", True), ("after", True)]
    assert state.error is None or "try" not in state.error
    assert list((config.state_dir / "snapshots").glob("*/objects/*")) == []
    assert isinstance(engine, LocalEngine)
    assert engine.snapshots.all() == []
