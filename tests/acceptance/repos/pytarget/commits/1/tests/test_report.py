from textkit import report


def test_report_ends_with_a_full_stop() -> None:
    # The report's format changed in 0.3; this test still expects the old one.
    assert report(3) == "3 items."
