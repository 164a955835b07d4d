"""`golem runs show` tells what prepared the box, the baseline, each check's result in
words (the reason of a kill, flaky, failing on the base too), the failing tests, why the
run is not verified and its error."""

from __future__ import annotations

import asyncio
import json

from golem.blueprint.book import RunBook
from golem.blueprint.events import RunEvent, RunNote
from golem.blueprint.state import CIRound, NodeRecord, PreparedStart
from golem.core.isolation import Isolation
from golem.forge import PullRequest
from golem.store import SqlStore
from tests.blueprint.outcomes import OOM, with_outcomes
from tests.cli.hostile import HOSTILE, SHOWN, foreign, golems_terminal, shown_as_text
from tests.cli.invoke import golem
from tests.cli.stored_runs import keep, new_run, store_url


def append(env: dict[str, str], event: RunEvent) -> None:
    """Add ``event`` to its run in the store of ``golem``'s state directory."""

    async def add() -> None:
        store = await SqlStore.connect(store_url(env))
        try:
            await RunBook(store).append(event)
        finally:
            await store.close()

    asyncio.run(add())


def test_runs_show_tells_every_result_and_why(
    golem_env: dict[str, str],
) -> None:
    state = with_outcomes(new_run("run-shown", status="escalated", base="main"))
    cached = {"dependencies": "python-3f2a9c", "dependencies_cached": True}
    keep(golem_env, state.model_copy(update=cached))
    done = golem({**golem_env, "COLUMNS": "250"}, "runs", "show", "run-shown")
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.decode().splitlines()]
    assert "setup failed: npm run prepare | tee log (out of memory)" in lines
    assert "not verified: no check ran on the change" in lines
    assert "dependencies python-3f2a9c: reused" in lines
    assert "prepared:" in lines
    assert "install uv sync passed 1.5s" in lines
    assert f"setup npm run prepare | tee log failed ({OOM}) 1.5s" in lines
    assert "baseline on main: lint failed (exit 1), test passed" in lines
    assert "lint ruff check . failed (exit 1) · fails on the base commit too 1.5s" in lines
    assert "build python -m build flaky (failed, then passed) 1.5s" in lines
    assert f"test pytest -q failed ({OOM}) 1.5s" in lines
    assert "✗ test: tests/test_calc.py::test_add assert 0 == 3" in lines


def test_runs_show_gives_each_ci_round_and_each_steps_cost(
    golem_env: dict[str, str],
) -> None:
    steps = [
        NodeRecord(node="ship", kind="host", outcome="success", started=1.0, ended=2.0),
        NodeRecord(node="ci", kind="ci", outcome="failure", started=2.0, ended=62.0,
                   detail="CI failed", cost_usd=0.0421),
    ]  # fmt: skip
    rounds = [
        CIRound(round=0, commit="a" * 40, started=2.0, ended=32.5, verdict="failed",
                failing=["test", "lint"], cost_usd=0.0421),
        CIRound(round=1, commit="b" * 40, started=40.0, ended=62.0, verdict="timed_out"),
    ]  # fmt: skip
    pr = PullRequest(provider="github", number=3, url="https://github.com/o/r/pull/3",
                     repo="o/r", base="main", head="golem/x", title="fix: x", body="",
                     labels=["needs-human"])  # fmt: skip
    state = new_run("run-ci", status="escalated", steps=steps, ci=rounds, ci_rounds=1, pr=pr)
    keep(golem_env, state)
    done = golem({**golem_env, "COLUMNS": "250"}, "runs", "show", "run-ci")
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.decode().splitlines()]
    assert "ci failure 60.0s $0.0421 CI failed" in lines
    assert f"0 {'a' * 12} failed test, lint 30.5s $0.0421" in lines
    assert f"1 {'b' * 12} timed_out - 22.0s -" in lines
    assert any("CI fix rounds: 1" in line for line in lines)
    assert "PR: https://github.com/o/r/pull/3 fix: x [needs-human]" in lines


def test_runs_show_and_ls_print_every_field_a_run_holds_as_text_and_no_foreign_sequence(
    golem_env: dict[str, str],
) -> None:
    """Text a run keeps but golem did not write (a forge's names, a repository's commands
    and node names, a box's test names, an error), as an older golem may have stored it:
    its markup shown as it is, its escape sequences and hidden characters gone, while
    golem's own styles are written."""
    steps = [NodeRecord(node=HOSTILE, kind="ci", outcome="failure", started=1.0, ended=2.0,
                        detail=f"CI failed: {HOSTILE}")]  # fmt: skip
    rounds = [CIRound(round=0, commit="a" * 40, started=2.0, ended=3.0, verdict="failed",
                      failing=[HOSTILE], note=HOSTILE)]  # fmt: skip
    pr = PullRequest(provider="github", number=3, url=f"https://github.com/o/r/pull/3{HOSTILE}",
                     repo="o/r", base="main", head=HOSTILE, title=HOSTILE, body=HOSTILE,
                     labels=[HOSTILE])  # fmt: skip
    state = with_outcomes(new_run("run-evil", status="escalated", steps=steps, ci=rounds, pr=pr))
    checks = [c.model_copy(update={"name": HOSTILE, "command": HOSTILE}) for c in state.checks]
    request = state.request.model_copy(update={"repo": HOSTILE, "task": HOSTILE})
    fields = {"title": HOSTILE, "error": HOSTILE, "unverified": HOSTILE, "branch": HOSTILE,
              "checks": checks, "request": request, "current": HOSTILE, "base": HOSTILE,
              "dependencies": HOSTILE, "diff_stat": HOSTILE}  # fmt: skip
    keep(golem_env, state.model_copy(update=fields))
    append(golem_env, RunNote(run_id="run-evil", message=HOSTILE))
    env = golems_terminal(golem_env)
    done = golem(env, "runs", "show", "--events", "run-evil")
    assert done.returncode == 0, done.stderr
    shown = done.stdout.decode()
    assert "\x1b[1m" in shown  # golem's own bold
    assert foreign(shown) == []
    assert shown_as_text(shown).count(SHOWN) >= 15
    listed = golem(env, "runs", "ls").stdout.decode()
    assert foreign(listed) == []
    assert SHOWN in shown_as_text(listed)  # the title
    assert f"{SHOWN} " in shown_as_text(listed).split("run-evil", 1)[1]  # the node


def test_runs_json_holds_a_runs_values_whole_and_no_raw_control_or_bidi_character(
    golem_env: dict[str, str],
) -> None:
    """JSON is for programs: the values come back exactly as kept, yet on a terminal no
    character outside ASCII is written raw (C1 controls and bidi overrides pass JSON's own
    escaping otherwise)."""
    state = new_run("run-json", status="escalated")
    keep(golem_env, state.model_copy(update={"title": HOSTILE, "error": HOSTILE}))
    shown = golem(golem_env, "runs", "show", "--json", "run-json")
    listed = golem(golem_env, "runs", "ls", "--json")
    for done in (shown, listed):
        assert done.returncode == 0, done.stderr
        assert done.stdout.isascii()
    assert json.loads(shown.stdout)["error"] == HOSTILE
    assert json.loads(listed.stdout)[0]["title"] == HOSTILE


def test_runs_show_says_what_isolation_the_runs_box_got_or_the_tier_it_waits_for(
    golem_env: dict[str, str],
) -> None:
    got = Isolation(tier="microvm", backend="microvm", accel="tcg")
    keep(golem_env, new_run("run-isolated", status="succeeded", tier="microvm", isolation=got))
    keep(golem_env, new_run("run-waiting", status="queued", tier="gvisor"))
    shown = golem(golem_env, "runs", "show", "run-isolated")
    assert shown.returncode == 0, shown.stderr
    assert "isolation: microvm (TCG)" in shown.stdout.decode().splitlines()
    waiting = golem(golem_env, "runs", "show", "run-waiting")
    assert "isolation: gvisor (no box yet)" in waiting.stdout.decode().splitlines()


def test_runs_ls_lists_each_run_as_its_state_says(
    golem_env: dict[str, str],
) -> None:
    keep(golem_env, new_run("run-listed", status="running", current="verify",
                            title="[bold]fix[/] the parser", cost_usd=0.25))  # fmt: skip
    keep(golem_env, new_run("run-bare"))
    done = golem({**golem_env, "COLUMNS": "200"}, "runs", "ls")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.decode().splitlines()[1:]]
    assert ["run-listed", "running", "verify", "[bold]fix[/]", "the", "parser", "$0.2500"] in [
        row[:-1] for row in rows
    ]
    assert ["run-bare", "queued", "-", "$0.0000"] in [row[:-1] for row in rows]


def test_runs_show_says_which_prepared_snapshot_the_runs_box_started_from_or_none(
    golem_env: dict[str, str],
) -> None:
    started = PreparedStart(name="prepared-abc", digest="d" * 64, commit="c" * 40)
    keep(golem_env, new_run("run-prepared", status="succeeded", started_from=started))
    keep(golem_env, new_run("run-cold", status="succeeded"))
    shown = golem(golem_env, "runs", "show", "run-prepared").stdout.decode().splitlines()
    assert f"started from: prepared-abc (sha256:{'d' * 12}, commit {'c' * 12})" in shown
    cold = golem(golem_env, "runs", "show", "run-cold").stdout.decode().splitlines()
    assert "started from: none" in cold
