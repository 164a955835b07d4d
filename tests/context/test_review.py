"""A pull request's review as a follow-up's task: every open thread with its id and place,
the reviews with their state, the conversation, resolved threads in brief; cut to its
budget, the oldest go first and what was asked stays."""

from __future__ import annotations

from golem.context.review import ReviewAsk, render_review
from golem.forge import IssueComment, PullRequest
from golem.forge.reviews import Review, ReviewDiscussion, ReviewNote, ReviewThread

PR = PullRequest(
    provider="github", number=7, url="https://github.com/o/r/pull/7", repo="o/r",
    base="main", head="golem/fix-add", title="Fix add()", body="",
)  # fmt: skip


def thread(ident: str, when: str, body: str, *, resolved: bool = False) -> ReviewThread:
    note = ReviewNote(id=ident, author="ana", body=body, created=when)
    return ReviewThread(id=ident, path="calc.py", line=3, resolved=resolved, comments=[note])


DISCUSSION = ReviewDiscussion(
    reviews=[
        Review(id="r1", author="ana", state="changes_requested", body="Needs docs."),
        Review(id="r2", author="bo", state="approved"),
    ],
    threads=[
        thread("101", "2026-01-01T10:00:00Z", "Old remark " + "x" * 400),
        thread("102", "2026-01-03T10:00:00Z", "Rename total to running_sum"),
        thread("103", "2026-01-02T10:00:00Z", "Typo here, long fixed", resolved=True),
    ],
    comments=[IssueComment(author="cy", body="Could it take ints too?")],
)
ASK = ReviewAsk(request="@golem please address the review", requested_by="ana", thread="102")


def test_every_thread_review_and_comment_is_there_with_ids_places_and_states() -> None:
    text = render_review(
        PR, DISCUSSION, ask=ASK, diff="-a\n+b", parent_summary="fixed add()", budget_tokens=8000
    ).text
    assert "## What ana asked in thread 102 (calc.py:3)\n\n@golem please address the review" in text
    assert "## Open thread 102 on calc.py:3\n\n- ana: Rename total to running_sum" in text
    assert "## Open thread 101 on calc.py:3" in text
    assert "- ana requested changes: Needs docs." in text
    assert "- bo approved" in text
    assert "- cy: Could it take ints too?" in text
    assert "- thread 103 on calc.py:3, resolved: ana: Typo here, long fixed" in text
    assert "## Open thread 103" not in text  # a resolved thread is shown only in brief
    assert "```diff\n-a\n+b\n```" in text
    assert "fixed add()" in text
    assert text.index("Open thread 102") < text.index("Open thread 101")  # newest first


def test_cut_to_its_budget_the_oldest_thread_goes_and_the_request_stays() -> None:
    review = render_review(PR, DISCUSSION, ask=ASK, diff="", budget_tokens=200)
    assert "please address the review" in review.text
    assert "Rename total to running_sum" in review.text
    assert "Old remark" not in review.text
    assert "thread 101" in review.dropped
    assert review.tokens <= 200
