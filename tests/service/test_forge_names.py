"""The rules for names bound for a forge's URL paths: what real forges name (a `.github`
repository, nested GitLab groups, a bot's login, a release branch) passes, and whatever
could leave its place in the path, or ask the forge something else, is refused."""

from __future__ import annotations

from typing import Any

import pytest

from golem.blueprint import RunRequest
from golem.blueprint.state import FollowUp
from golem.core.errors import NameRefused
from golem.service.forge_names import (
    GITHUB_DELIVERY,
    branch,
    check_delivery,
    check_run_names,
    login,
    project_path,
    repo_name,
    thread,
)

LEGIT: list[tuple[Any, Any]] = [
    (repo_name, "octo/calculator"), (repo_name, "octo-org/.github"), (repo_name, "o/_private"),
    (repo_name, "o/a...b"), (repo_name, "O/Name.with-dots_1"),
    (project_path, "group/sub/project"), (project_path, "g/.hidden/x"),
    (login, "octocat"), (login, "dependabot[bot]"), (login, "user_shortcode"),
    (thread, "7bcc6b5f2d2d79a1b3d1f2ef8ba9c8ed5d9bc36a"), (thread, "4242"),
    (branch, "main"), (branch, "feature/JIRA-123_fix"), (branch, "release/1.2.3"),
    (branch, "deps/bump+pin"),
]  # fmt: skip
HOSTILE: list[tuple[Any, Any]] = [
    (repo_name, "../.."), (repo_name, "o/.."), (repo_name, "o/."), (repo_name, "o/x\n"),
    (repo_name, "o/-x"), (repo_name, "o/x/y"), (repo_name, 7),
    (project_path, "group/.."), (project_path, "group"), (project_path, "g//x"),
    (login, "../user"), (login, "a\n"), (login, "a[bot]x"),
    (thread, "1/../2"), (thread, "x" * 65),
    (branch, "-x"), (branch, "a..b"), (branch, "a/.b"), (branch, "a.lock"),
    (branch, "a.lock/b"), (branch, "a#b"), (branch, "a%2f"), (branch, "x" * 256),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "name"), LEGIT)
def test_names_real_forges_give_pass(rule: Any, name: Any) -> None:
    assert rule(name) is None


@pytest.mark.parametrize(("rule", "name"), HOSTILE)
def test_names_that_could_leave_their_place_are_refused(rule: Any, name: Any) -> None:
    assert rule(name) is not None


def test_a_delivery_is_refused_at_its_first_bad_field_and_a_missing_one_is_left_alone() -> None:
    check_delivery(GITHUB_DELIVERY, {"action": "labeled"})
    with pytest.raises(NameRefused) as refused:
        check_delivery(GITHUB_DELIVERY, {"repository": {"full_name": "o/.."}, "issue": "x"})
    assert (refused.value.field, refused.value.http_status) == ("repository.full_name", 422)


def test_a_run_requests_names_are_checked_for_its_forge_only() -> None:
    local = RunRequest(repo="/srv/x", issue="../issues/1.md", forge="local")
    check_run_names(local, "local")  # a file on the server: server_files' to decide
    asked = FollowUp(repo="group/sub/p", number=3, thread="f3ab1bd8")
    check_run_names(RunRequest(repo="/srv/x", follow_up=asked, base="main"), "gitlab")
    with pytest.raises(NameRefused) as refused:
        check_run_names(RunRequest(repo="/srv/x", follow_up=asked), "github")
    assert refused.value.field == "follow_up.repo"
