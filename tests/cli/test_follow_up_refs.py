"""`golem run --pr` names a pull (merge) request as people write it, on each forge."""

from __future__ import annotations

import pytest

from golem.cli.run_cmd import follow_up_of
from golem.core.errors import ForgeRequestRejected


@pytest.mark.parametrize(
    ("ref", "repo", "forge", "named"),
    [
        ("3", "/srv/calc.git", "local", ("/srv/calc.git", 3)),
        ("#3", "https://github.com/octo/calc.git", "github", ("octo/calc", 3)),
        ("octo/calc#12", "https://github.com/octo/calc", "github", ("octo/calc", 12)),
        ("https://github.com/octo/calc/pull/12", "x", "github", ("octo/calc", 12)),
        ("!4", "https://gitlab.com/group/sub/calc.git", "gitlab", ("group/sub/calc", 4)),
        ("group/sub/calc!4", "x", "gitlab", ("group/sub/calc", 4)),
        ("https://gitlab.com/group/calc/-/merge_requests/9", "x", "gitlab", ("group/calc", 9)),
    ],
)
def test_a_pull_request_is_named_as_people_write_it(
    ref: str, repo: str, forge: str, named: tuple[str, int]
) -> None:
    asked = follow_up_of(ref, repo, forge=forge, request="look again")
    assert (asked["repo"], asked["number"], asked["request"]) == (*named, "look again")


def test_a_number_for_a_repository_no_forge_can_name_is_refused() -> None:
    with pytest.raises(ForgeRequestRejected, match="does not name a GitHub repository"):
        follow_up_of("3", "/srv/calc.git", forge="github", request=None)
