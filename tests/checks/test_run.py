"""A check runs in a box with no run around it: golem.checks takes the box, the secrets and
where its live output goes, and gives back the result (the blueprint only makes events of
both)."""

from __future__ import annotations

import shlex

import pytest

from golem.checks import run_check
from golem.sandbox import Engine

pytestmark = pytest.mark.bwrap

HIDDEN = "s3cr3t-token-value"
XML = (
    '<testsuite><testcase classname="calc" name="test_y"><failure message="no"/></testcase>'
    "</testsuite>"
)
WRITES_A_FAILURE = (
    "import os, sys\n"
    f"print('using {HIDDEN}')\n"
    "os.makedirs('out', exist_ok=True)\n"
    f"open('out/junit.xml', 'w').write({XML!r})\n"
    "sys.exit(3)\n"
)


async def test_a_check_runs_in_a_box_alone_its_output_live_and_masked_its_failures_read(
    engine: Engine,
) -> None:
    live: list[tuple[str, str]] = []
    command = f"python3 -c {shlex.quote(WRITES_A_FAILURE)}"

    async with engine.session() as box:
        await box.execute("mkdir -p /workspace")
        result = await run_check(
            box,
            "test",
            command,
            live=lambda stream, text: live.append((stream, text)),
            secrets=[HIDDEN],
        )

    printed = "".join(text for stream, text in live if stream == "stdout")
    assert "using " in printed
    assert HIDDEN not in printed
    assert HIDDEN not in result.output_tail
    assert (result.name, result.command, result.passed, result.exit_code) == (
        "test",
        command,
        False,
        3,
    )
    assert [(f.name, f.message) for f in result.failures] == [("calc.test_y", "no")]


async def test_a_check_that_passes_says_so_and_keeps_the_end_of_its_output(
    engine: Engine,
) -> None:
    live: list[tuple[str, str]] = []
    async with engine.session() as box:
        await box.execute("mkdir -p /workspace")
        result = await run_check(
            box, "lint", "echo clean", live=lambda stream, text: live.append((stream, text))
        )
    assert (result.passed, result.exit_code, result.failures) == (True, 0, [])
    assert "clean" in result.output_tail
    assert live == [("stdout", "clean\n")]
