"""A page of run_events holds at most MAX_PAGE_BYTES of events (always the first one), so
a run whose checks print a lot never floods an MCP client's context in one answer."""

from __future__ import annotations

from golem.blueprint.events import CheckOutput
from golem.service.mcp.runs import MAX_PAGE_BYTES, bounded_page


def printed(text: str) -> CheckOutput:
    return CheckOutput(
        run_id="run-1", node="verify", round=0, check="test", command="pytest",
        stream="stdout", text=text,
    )  # fmt: skip


def test_a_page_stops_before_it_passes_its_byte_bound() -> None:
    chunk = "x" * (MAX_PAGE_BYTES // 5)
    events = [(seq, printed(chunk)) for seq in range(1, 11)]
    page = bounded_page(events)
    assert [event.seq for event in page] == [1, 2, 3, 4]
    assert sum(len(event.model_dump_json()) for event in page) <= MAX_PAGE_BYTES


def test_one_event_larger_than_the_bound_still_comes_alone() -> None:
    huge = printed("y" * (MAX_PAGE_BYTES * 2))
    page = bounded_page([(7, huge), (8, printed("small"))])
    assert [event.seq for event in page] == [7]
    assert page[0].data["text"] == huge.text
