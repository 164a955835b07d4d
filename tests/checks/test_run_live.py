"""What a check prints reaches the run's events live: CheckOutput pieces in order before
its CheckFinished, gathered, capped when the check prints too much, masked with the run's
secrets (the box's own and those only the run knows), and sent while a check is silent
(a run cancelled then leaves no box)."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest
from golem.blueprint.book import RunBook
from golem.blueprint.events import CheckFinished, CheckOutput, RunEvent
from golem.checks import TestFailure
from golem.checks.reports import REPORT_BUDGET
from golem.checks.run import FLUSH_BYTES, LIVE_CAP
from golem.core import EventSink, GolemConfig
from golem.forge import ForgeCredentials
from golem.sandbox import Engine
from golem.store import SqlStore
from tests.blueprint.repos import make_remote

pytestmark = pytest.mark.bwrap

PRINTING = """\
name: printing
nodes:
  - id: prepare
    kind: host
    action: prepare
    next: checks
  - id: checks
    kind: box
    run: {commands}
    next: end
"""


async def run_commands(
    config: GolemConfig,
    engine: Engine,
    parent: Path,
    commands: list[str],
    *,
    credentials: ForgeCredentials | None = None,
    box: str = "",
    status: str = "succeeded",
    watch: EventSink[RunEvent] | None = None,
) -> tuple[list[RunEvent], list[RunEvent]]:
    """Run a blueprint whose one box node runs ``commands`` (``watch`` sees each event
    as it comes): the events the runner showed, and those the store kept."""
    blueprint = parent / "printing.yaml"
    blueprint.write_text(box + PRINTING.format(commands=json.dumps(commands)))
    store = await SqlStore.open(config)
    shown: list[RunEvent] = []

    def show(event: RunEvent) -> None:
        shown.append(event)
        if watch is not None:
            watch(event)

    runner = Runner(
        config,
        engine=engine,
        store=store,
        credentials=credentials,
        on_event=show,
    )
    request = RunRequest(repo=str(make_remote(parent)), task="print", blueprint=str(blueprint))
    state = await asyncio.wait_for(runner.start(request), 120)
    assert state.status == status, state.error
    kept = [event for _, event in await RunBook(store).events(state.id)]
    await store.close()
    return shown, kept


def outputs(events: list[RunEvent], stream: str) -> list[CheckOutput]:
    return [e for e in events if isinstance(e, CheckOutput) and e.stream == stream]


async def test_a_checks_lines_arrive_in_order_before_its_result_shown_and_kept(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    lines = "for i in $(seq 1 2000); do echo line $i; done; echo oops >&2"
    shown, kept = await run_commands(config, engine, reachable_dir, [lines, "echo second"])
    assert [e.model_dump() for e in shown] == [e.model_dump() for e in kept]
    checks = [e for e in kept if isinstance(e, CheckOutput | CheckFinished)]
    first_done = next(i for i, e in enumerate(checks) if isinstance(e, CheckFinished))
    first, second = checks[:first_done], checks[first_done + 1 : -1]
    assert {(e.node, e.round, e.check, e.command) for e in first} == {
        ("checks", 0, lines, lines)
    }  # fmt: skip
    assert "".join(e.text for e in outputs(first, "stdout")) == "".join(
        f"line {i}\n" for i in range(1, 2001)
    )
    assert len(first) <= 50  # gathered into pieces, not an event per line
    assert "".join(e.text for e in outputs(first, "stderr")) == "oops\n"
    assert [(e.check, e.stream, e.text) for e in second] == [
        ("echo second", "stdout", "second\n")
    ]  # fmt: skip
    assert isinstance(checks[-1], CheckFinished)
    assert checks[-1].check.output_tail == "second"


async def test_a_check_that_prints_too_much_is_cut_at_the_live_cap_with_a_note(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    huge = "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo the end"
    _, kept = await run_commands(config, engine, reachable_dir, [huge])
    stdout = outputs(kept, "stdout")
    assert sum(len(e.text.encode()) for e in stdout) == LIVE_CAP
    assert len(stdout) <= LIVE_CAP // FLUSH_BYTES + 2  # full pieces (one more if it paused)
    [note] = outputs(kept, "golem")
    assert kept.index(note) > kept.index(stdout[-1])
    assert "more bytes of output not shown live" in note.text
    [finished] = [e for e in kept if isinstance(e, CheckFinished)]
    assert finished.check.output_tail.endswith("x\nthe end")


async def test_a_secret_a_check_prints_is_masked_in_its_live_output(
    config: GolemConfig,
    engine: Engine,
    reachable_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    box_secret = "deploy-secret-0123456789"  # noqa: S105 - a test value
    run_secret = "forge-token-only-the-run-knows"  # noqa: S105 - a test value
    monkeypatch.setenv("DEPLOY_TOKEN", box_secret)
    halves = f"'{run_secret[:10]}', '{run_secret[10:]}'"
    split = f"python3 -c \"import sys; [print(p, end='', flush=True) for p in ({halves})]\""
    shown, kept = await run_commands(
        config, engine, reachable_dir,
        ['echo "box: $DEPLOY_TOKEN"', f"echo run: {run_secret}", split],
        credentials=ForgeCredentials(github=run_secret),
        box="box: {secrets_env: [DEPLOY_TOKEN]}\n",
    )  # fmt: skip
    for events in (shown, kept):
        text = "".join(e.model_dump_json() for e in events)
        assert box_secret not in text
        assert run_secret not in text
        assert [e.text for e in outputs(events, "stdout")] == ["box: ***\n", "run: ***\n", "***"]


async def test_a_silent_checks_output_so_far_is_shown_and_cancelling_it_leaves_no_box(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    store = await SqlStore.open(config)
    requests: list[asyncio.Future[None]] = []

    def cancel_once_shown(event: RunEvent) -> None:
        if isinstance(event, CheckOutput) and event.text == "started\n":
            # the check prints nothing more for 10 min
            requests.append(asyncio.ensure_future(store.runs.request_cancel(event.run_id)))

    _, kept = await run_commands(
        config, engine, reachable_dir, ["echo started; sleep 600"],
        status="cancelled", watch=cancel_once_shown,
    )  # fmt: skip
    await asyncio.gather(*requests)
    await store.close()
    assert [e.text for e in outputs(kept, "stdout")] == ["started\n"]
    assert not any(isinstance(e, CheckFinished) for e in kept)
    assert [b.id for b in await engine.boxes() if b.labels.get("golem.run") == kept[0].run_id] == []


async def test_a_checks_result_keeps_the_end_of_each_stream_however_noisy_the_other(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    noisy = (
        "echo 'FAILED tests/test_x.py::test_x - assert 1 == 2'; echo '1 failed in 0.1s'; "
        'for i in $(seq 1 40000); do echo "warning: noise $i"; done >&2; exit 1'
    )
    _, kept = await run_commands(config, engine, reachable_dir, [noisy])
    [finished] = [e for e in kept if isinstance(e, CheckFinished)]
    tail = finished.check.output_tail
    assert [f.name for f in finished.check.failures] == ["tests/test_x.py::test_x"]
    assert "[stdout]\nFAILED tests/test_x.py::test_x - assert 1 == 2\n1 failed in 0.1s" in tail
    assert tail.endswith("warning: noise 40000")
    assert len(tail) <= REPORT_BUDGET


async def test_a_check_killed_by_the_memory_limit_says_so_in_its_result(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    hog = "python3 -c 'x = []\nwhile True: x.append(bytearray(16 * 2**20))'"
    _, kept = await run_commands(config, engine, reachable_dir, [hog], box="box: {memory: 128m}\n")
    [finished] = [e for e in kept if isinstance(e, CheckFinished)]
    assert finished.check.exit_code == 137
    assert (finished.check.reason or "").startswith("killed by the box's memory limit (128m)")


def writes_junit(test: str, then: str = "") -> str:
    """A check that writes a JUnit report naming ``test`` as failed, as a test runner
    does: after it started (in Python), then runs ``then``."""
    case = f'<testcase classname="suite" name="{test}"><failure message="{test} broke"/>'
    xml = f"<testsuite>{case}</testcase></testsuite>"
    path = f"reports/junit-{test}.xml"
    code = f"import os; os.makedirs('reports', exist_ok=True); open({path!r}, 'w').write({xml!r})"
    return f"python3 -c {shlex.quote(code)}{then}"


async def test_junit_xml_a_failed_check_wrote_names_its_failures_and_older_reports_do_not(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    earlier = writes_junit("stale")
    failing = writes_junit("fresh", then="; echo '2 problems'; exit 1")
    _, kept = await run_commands(config, engine, reachable_dir, [earlier, failing])
    finished = [e.check for e in kept if isinstance(e, CheckFinished)]
    assert [(c.passed, c.failures) for c in finished] == [
        (True, []),
        (False, [TestFailure(name="suite.fresh", message="fresh broke")]),
    ]
    assert finished[1].output_tail == (
        "Failing tests (1):\n- suite.fresh\n    fresh broke\n\n[stdout]\n2 problems"
    )
