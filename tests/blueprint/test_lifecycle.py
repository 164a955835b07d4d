"""A run's lifecycle (golem.blueprint.lifecycle): every move the table allows is made, every
other one is refused naming the run and both statuses; the named transitions keep what
goes with the status (owner, error, pause); the one orphan test; and no module of golem
assigns a run's status but the lifecycle."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from golem.blueprint import RunBook, RunRequest, RunState, RunStatus, lifecycle
from golem.blueprint.state import Pause
from golem.core.errors import RunConflict, StatusMoveRefused
from golem.sandbox.records import process_start_time
from golem.store import MemoryStore

STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
ALLOWED = [(start, to) for start in STATUSES for to in sorted(lifecycle.MOVES[start])]
REFUSED = [(start, to) for start in STATUSES for to in STATUSES if to not in lifecycle.MOVES[start]]
SOURCE = Path(lifecycle.__file__).parents[1]


def run(status: RunStatus = "queued", **fields: object) -> RunState:
    request = RunRequest(repo="/srv/repo", task="fix it")
    return RunState.model_validate(
        {"id": "run-1", "status": status, "request": request, "blueprint": "minion",
         "blueprint_source": "", **fields}
    )  # fmt: skip


def test_the_table_names_every_status_and_only_statuses() -> None:
    assert set(lifecycle.MOVES) == set(STATUSES)
    assert all(targets <= set(STATUSES) for targets in lifecycle.MOVES.values())


@pytest.mark.parametrize(("start", "to"), ALLOWED)
def test_every_allowed_move_is_made(start: RunStatus, to: RunStatus) -> None:
    state = run(start)
    lifecycle.move_status(state, to)
    assert state.status == to


@pytest.mark.parametrize(("start", "to"), REFUSED)
def test_every_other_move_is_refused_naming_the_run_and_both_statuses(
    start: RunStatus, to: RunStatus
) -> None:
    state = run(start)
    with pytest.raises(StatusMoveRefused, match=f"run run-1 cannot move from {start} to {to}"):
        lifecycle.move_status(state, to)
    assert state.status == start


def test_an_ended_run_never_moves_again() -> None:
    for ended in ("succeeded", "cancelled"):
        assert lifecycle.MOVES[ended] == frozenset()
    assert isinstance(StatusMoveRefused("x"), RunConflict)


def test_a_failed_run_goes_on_only_while_resumable_and_forgets_its_error() -> None:
    refused = run("failed", error="boom")
    with pytest.raises(StatusMoveRefused, match="failed and cannot go on"):
        lifecycle.mark_running(refused)
    assert refused.status == "failed"
    resumable = run("failed", error="token refused", resumable=True)
    lifecycle.mark_running(resumable)
    assert (resumable.status, resumable.error, resumable.resumable) == ("running", None, False)


def test_requeue_forgets_the_runs_owner() -> None:
    state = run("running", owner_pid=1, owner_start=2, owner_server="host:1")
    lifecycle.mark_queued(state)
    assert (state.status, state.owner_pid, state.owner_start, state.owner_server) == (
        "queued", None, None, None,
    )  # fmt: skip


def test_pause_keeps_why_and_finish_keeps_a_verdict() -> None:
    state = run("running")
    paused = Pause(node="code", reason="down", since=1.0, resume_at=2.0, node_started=1.0)
    lifecycle.mark_paused(state, paused)
    assert (state.status, state.pause) == ("waiting", paused)
    shipped = run("unverified")
    lifecycle.mark_finished(shipped)
    assert shipped.status == "unverified"
    done = run("running")
    lifecycle.mark_finished(done)
    assert done.status == "succeeded"
    lifecycle.mark_finished(done)  # a second finish changes nothing
    assert done.status == "succeeded"


def test_a_run_is_orphaned_only_when_its_runner_on_this_host_is_gone() -> None:
    me, started = os.getpid(), process_start_time(os.getpid())
    assert not lifecycle.orphaned(run("running", owner_pid=me, owner_start=started))
    assert lifecycle.orphaned(run("running", owner_pid=me, owner_start=(started or 0) + 1))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert lifecycle.orphaned(run("running", owner_pid=int(ended.stdout), owner_start=1))
    assert lifecycle.orphaned(run("running"))  # nobody runs it
    here = f"{socket.gethostname()}:{me}"
    assert lifecycle.orphaned(run("running", owner_pid=None, owner_server=here))
    elsewhere = run("running", owner_pid=None, owner_server="another-host:12")
    assert not lifecycle.orphaned(elsewhere)  # that host's server answers for it


async def test_a_run_that_could_not_start_ends_failed_with_its_run_end() -> None:
    book = RunBook(MemoryStore(tenant="acme"))
    state = run("queued")
    await book.create(state)
    await lifecycle.fail_unstarted(book, state, "no forge token")
    saved = await book.load("run-1")
    assert saved is not None
    assert (saved.status, saved.error) == ("failed", "no forge token")
    [(_, end)] = await book.events("run-1")
    assert (end.type, getattr(end, "status", None)) == ("run_end", "failed")


def _status_assignments(path: Path) -> list[int]:
    """Lines where ``path`` sets a run's status (``x.status = ...``, ``status=`` in a
    RunState's ``model_copy`` update) outside the lifecycle; an attempt's record and a
    loop's state are other things."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if (
                        isinstance(leaf, ast.Attribute)
                        and leaf.attr == "status"
                        and "record" not in ast.unparse(leaf.value)
                    ):
                        lines.append(node.lineno)
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if "status" in keys and "cancel_requested" in keys:
                lines.append(node.lineno)
    return lines


def test_no_module_but_the_lifecycle_assigns_a_runs_status() -> None:
    places = [
        *sorted((SOURCE / "blueprint").rglob("*.py")),
        SOURCE / "service" / "queue.py",
        *sorted((SOURCE / "cluster").rglob("*.py")),
    ]
    found = {
        str(path.relative_to(SOURCE)): lines
        for path in places
        if path.name not in {"lifecycle.py", "book.py"}  # book: reading a record
        and (lines := _status_assignments(path))
    }
    assert found == {}


async def test_a_run_is_queued_again_once_and_forgets_its_owner() -> None:
    book = RunBook(MemoryStore(tenant="acme"))
    await book.create(run("queued"))
    claimed = await book.store.queue.claim_next("host:1")
    assert claimed is not None
    state = await book.load("run-1")
    assert state is not None
    assert await lifecycle.requeue_run(book, state)
    again = await book.load("run-1")
    assert again is not None
    assert (again.status, again.owner_server) == ("queued", None)
    assert not await lifecycle.requeue_run(book, again)  # queued already: nothing to do
