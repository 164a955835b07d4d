"""Whatever a check prints, its report fits the budget, holds no escape sequence or
carriage return, and keeps whole characters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from golem.checks.reports import failure_report, output_report

PIECES = st.sampled_from(
    [
        "\n",
        "\r",
        "\r\n",
        " ",
        "\x1b[31m",
        "\x1b[0m",
        "\x1b]0;title\x07",
        "\x1b",
        "\x9b1m",
        "FAILED t.py::test_x - assert 1 == 2\n",
        "E       assert 1 == 2\n",
        "___ test_x ___\n",
        "=== FAILURES ===\n",
        "--- FAIL: TestX (0.00s)\n",
        "    x_test.go:3: no\n",
        "test a::b ... FAILED\n",
        "---- a::b stdout ----\n",
        "not ok 1 - x\n",
        "  ---\n",
        "  \u25cf s \u203a t\n",
        " FAIL  a.ts > s > t\n",
        "\u2713 \u00e9\u4e2d\U0001f600",
        "x" * 300,
    ]
)
OUTPUT = st.lists(st.one_of(PIECES, st.text(max_size=50)), max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(stdout=OUTPUT, stderr=OUTPUT, budget=st.integers(min_value=0, max_value=5000))
def test_a_report_fits_its_budget_in_plain_whole_characters(
    stdout: str, stderr: str, budget: int
) -> None:
    for text in (
        failure_report("make check", stdout, stderr, budget=budget).text,
        output_report(stdout, stderr, budget=budget),
    ):
        assert len(text) <= budget
        assert "\x1b" not in text
        assert "\x9b" not in text
        assert "\r" not in text
        text.encode("utf-8")
