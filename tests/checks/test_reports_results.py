"""A check's result says why it failed when its exit code does not: the box's memory limit
(not "exit 137"), a timeout, silence past the idle timeout, a command that could not start
or is not in the box, a fatal signal; and the fix prompt shows that reason."""

from __future__ import annotations

import shlex

import pytest

from golem.checks import CheckResult, describe_failures, reports
from golem.checks.reports import check_result
from golem.checks.reports.result import SILENT
from golem.checks.reports.written import STARTED, junit_written
from golem.core.events import ErrorEvent, ExitEvent, OutputEvent
from golem.sandbox import Box, Engine, ExecRequest
from tests.conftest import QUICK_START_BACKENDS

pytestmark = pytest.mark.bwrap

HOG = "python3 -c 'x = []\nwhile True: x.append(bytearray(16 * 2**20))'"


async def check(box: Box, request: ExecRequest) -> CheckResult:
    """Run ``request`` in ``box`` as a check named test."""
    printed = {"stdout": b"", "stderr": b""}
    ended, start_error = None, None
    async for event in box.stream(request):
        if isinstance(event, OutputEvent):
            printed[event.type] += event.data
        elif isinstance(event, ErrorEvent):
            start_error = event.message
        elif isinstance(event, ExitEvent):
            ended = event
    assert ended is not None
    command = request.cmd if isinstance(request.cmd, str) else " ".join(request.cmd or [])
    return check_result(
        "test",
        command,
        ended,
        printed["stdout"].decode(),
        printed["stderr"].decode(),
        memory=box.spec.memory,
        timeout=request.timeout,
        idle_timeout=request.idle_timeout,
        start_error=start_error,
    )


@pytest.mark.parametrize(
    "backend",
    # gVisor has no OOM killer of its own: over its memory a gVisor box ends whole, with
    # the check in it (tests/sandbox/test_security.py proves that; docs/sandbox.md).
    [p for p in QUICK_START_BACKENDS if p.values[0] != "gvisor"],
)
async def test_a_check_killed_by_the_boxs_memory_limit_says_so(engine: Engine) -> None:
    async with engine.session(engine.spec(memory="96m")) as box:
        result = await check(box, ExecRequest(cmd=f"echo started; {HOG}"))
    assert (result.passed, result.exit_code) == (False, 137)
    assert result.reason is not None
    assert result.reason.startswith("killed by the box's memory limit (96m): raise the box's")
    assert result.output_tail == "[stdout]\nstarted\n\n[stderr]\nKilled"  # the shell's word
    assert f"({result.reason})\n\n```\n[stdout]" in describe_failures([result])


async def test_a_check_that_runs_past_its_timeout_says_after_how_long(box: Box) -> None:
    result = await check(box, ExecRequest(cmd="echo waiting; sleep 60", timeout=1.5))
    assert (result.passed, result.timed_out) == (False, True)
    assert result.reason == "timed out after 1.5 s and was stopped"
    assert "(timed out after 1.5 s" in describe_failures([result])


async def test_a_check_silent_past_its_idle_timeout_says_it_printed_nothing(box: Box) -> None:
    request = ExecRequest(cmd="echo first; sleep 60", timeout=60, idle_timeout=1)
    result = await check(box, request)
    assert (result.passed, result.timed_out) == (False, True)
    assert result.reason == "printed nothing for 1.0 s and was stopped (the idle timeout)"


async def test_a_check_whose_program_cannot_start_says_why(box: Box) -> None:
    result = await check(box, ExecRequest(cmd=["/usr/bin/no-such-tool", "--check"]))
    assert not result.passed
    assert result.reason is not None
    assert result.reason.startswith("could not start: ")
    assert "no-such-tool" in result.reason


async def test_a_check_whose_command_is_not_in_the_box_says_so(box: Box) -> None:
    result = await check(box, ExecRequest(cmd="no-such-linter --fix src"))
    assert (result.passed, result.exit_code) == (False, 127)
    assert result.reason is not None
    assert result.reason.startswith("could not start: ")
    assert result.reason.endswith("no-such-linter: not found (the box does not have it)")


async def test_a_check_that_crashes_on_a_signal_names_it(box: Box) -> None:
    result = await check(box, ExecRequest(cmd="python3 -c 'import os; os.abort()'"))
    assert not result.passed
    assert result.reason == "killed by SIGABRT"


async def test_a_check_that_just_fails_has_no_reason_beyond_its_exit_code(box: Box) -> None:
    result = await check(box, ExecRequest(cmd="echo 'lint: 3 problems' >&2; exit 1"))
    assert (result.passed, result.reason, result.output_tail) == (False, None, "lint: 3 problems")
    assert "(exit 1)\n\n```\nlint: 3 problems\n```" in describe_failures([result])


async def test_a_check_that_fails_without_a_word_says_it_printed_nothing(box: Box) -> None:
    result = await check(box, ExecRequest(cmd="exit 3"))
    assert (result.passed, result.reason, result.output_tail) == (False, None, SILENT)


def test_a_report_holding_a_code_fence_stays_inside_the_fix_prompts_block() -> None:
    tail = "Failing tests (1):\n- README.md::doc\n    ```python\n    >>> 1 + 1\n    ```"
    failed = CheckResult(
        name="docs",
        command="make doctest",
        passed=False,
        exit_code=2,
        duration=1.0,
        output_tail=tail,
    )
    shown = describe_failures([failed])
    assert shown == f"### docs: `make doctest` (exit 2)\n\n````\n{tail}\n````"


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_the_junit_xml_a_check_wrote_is_read_back_from_its_box(engine: Engine) -> None:
    xml = '<testsuite><testcase name="t"><failure message="no"/></testcase></testsuite>'
    write = (
        f"import os; os.makedirs('out', exist_ok=True); open('out/junit.xml', 'w').write({xml!r})"
    )
    async with engine.session() as box:
        await box.execute("mkdir -p old && echo '<testsuite/>' > old/junit.xml")
        await box.execute(ExecRequest(cmd=f"python3 -c {shlex.quote(write)}", files={STARTED: b""}))
        assert await junit_written(box) == [xml]


def test_the_reports_package_exports_every_name_it_lists() -> None:
    for name in reports.__all__:
        assert getattr(reports, name) is not None, name
    assert {"check_result", "failure_report", "junit_paths", "REPORT_BUDGET"} <= set(
        reports.__all__
    )
