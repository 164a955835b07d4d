"""Names bound for a forge's URL paths, checked where they enter the server: a webhook's
delivery and a run request. A repository, a project path, an issue reference, a branch, a
login, a review thread or a number that is not one (a dot segment, a separator, a
percent-escape, a query, a fragment, white space...) is refused with a 422 naming its
field, before any forge is asked anything: the forge clients put these names into paths
as they are, and a name that leaves its segment would ask the forge something else, with
the tenant's token.

Each rule is an allow-list (what a name of that kind may be), never a list of bad ones;
every field of a delivery that flows into a path has one (``GITHUB_DELIVERY``,
``GITLAB_DELIVERY``), as every field of a run request that does (``check_run_names``).
A field a delivery leaves out is not checked here: the trigger ignores such a delivery.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from golem.blueprint import RunRequest
from golem.core.errors import ForgeError, NameRefused
from golem.forge import is_project_path, is_repo_name, parse_gitlab_ref, parse_issue_ref

__all__ = ["GITHUB_DELIVERY", "GITLAB_DELIVERY", "Rule", "check_delivery", "check_run_names"]

Rule = Callable[[Any], str | None]
"""A name in, what is wrong with it out (None: it may go into a path)."""
NUMBER_MAX = 2**31 - 1  # an issue's or pull request's number (the store's integer)
ID_MAX = 2**63 - 1  # a forge's own ids (comments, users) outgrow 32 bits
LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}(\[bot\])?")
THREAD = re.compile(r"[A-Za-z0-9]{1,64}")
BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+-]{0,254}")
BRANCH_BREAKS = re.compile(r"\.\.|//|/\.|[/.]\Z|\.lock\Z|\.lock/")


def _positive(most: int) -> Rule:
    def rule(value: Any) -> str | None:
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most:
            return None
        return f"{value!r} is not a number from 1 to {most}"

    return rule


number = _positive(NUMBER_MAX)
identifier = _positive(ID_MAX)


def repo_name(value: Any) -> str | None:
    """A GitHub repository: ``owner/name``."""
    if isinstance(value, str) and is_repo_name(value):
        return None
    return (
        f"{value!r} is not a GitHub repository: OWNER/NAME, each of letters, digits, '.', '_' "
        "and '-', not starting with '-', and neither '.' nor '..'"
    )


def project_path(value: Any) -> str | None:
    """A GitLab project: ``group/sub/project``."""
    if isinstance(value, str) and is_project_path(value):
        return None
    return (
        f"{value!r} is not a GitLab project path: GROUP/PROJECT (subgroups allowed), each of "
        "letters, digits, '.', '_' and '-', not starting with '-', and neither '.' nor '..'"
    )


def login(value: Any) -> str | None:
    """A GitHub login (an app's ends ``[bot]``)."""
    if isinstance(value, str) and LOGIN.fullmatch(value):
        return None
    return f"{value!r} is not a GitHub login: letters, digits, '-' and '_'"


def thread(value: Any) -> str | None:
    """A review thread: a GitHub comment's id, a GitLab discussion's."""
    if isinstance(value, str) and THREAD.fullmatch(value):
        return None
    return f"{value!r} is not a review thread's id: 1 to 64 letters and digits"


def branch(value: Any) -> str | None:
    """A branch name that git takes and that stays one name in a URL path."""
    if isinstance(value, str) and BRANCH.fullmatch(value) and not BRANCH_BREAKS.search(value):
        return None
    return (
        f"{value!r} is not a branch name golem takes: letters, digits, '.', '_', '+', '-' "
        "and '/' between parts, starting with a letter, a digit or '_'; no '..', '//', part "
        "starting with '.', or ending with '/', '.' or '.lock'"
    )


GITHUB_DELIVERY: dict[str, Rule] = {
    "repository.full_name": repo_name,
    "issue.number": number,
    "pull_request.number": number,
    "comment.user.login": login,
    "review.user.login": login,
    "comment.id": identifier,
    "comment.in_reply_to_id": identifier,
}
"""The fields of a GitHub delivery that the trigger puts into paths, and their rules."""
GITLAB_DELIVERY: dict[str, Rule] = {
    "project.path_with_namespace": project_path,
    "object_attributes.iid": number,
    "issue.iid": number,
    "merge_request.iid": number,
    "object_attributes.discussion_id": thread,
    "user.id": identifier,
    "object_attributes.author_id": identifier,
}
"""The fields of a GitLab delivery that the trigger puts into paths, and their rules."""


def check_delivery(rules: Mapping[str, Rule], payload: Mapping[str, Any]) -> None:
    """NameRefused for the first field of ``payload`` that breaks its rule."""
    for field, rule in rules.items():
        value = _dig(payload, field)
        if value is not None and (problem := rule(value)) is not None:
            raise NameRefused(field, problem)


def check_run_names(request: RunRequest, forge: str) -> None:
    """NameRefused for the first field of a run request for ``forge`` that would go into
    its paths and breaks its rule: the issue reference, the base branch, the pull request
    a follow-up answers."""
    if request.issue is not None and forge in ("github", "gitlab"):
        _check("issue", _issue_ref(request.issue, forge))
    if request.base is not None:
        _check("base", branch(request.base))
    asked = request.follow_up
    if asked is not None and forge in ("github", "gitlab"):
        _check("follow_up.repo", (repo_name if forge == "github" else project_path)(asked.repo))
        _check("follow_up.number", number(asked.number))
        if asked.thread is not None:
            _check("follow_up.thread", thread(asked.thread))


def _issue_ref(ref: str, forge: str) -> str | None:
    try:
        parse_issue_ref(ref) if forge == "github" else parse_gitlab_ref(ref)
    except ForgeError as exc:
        return exc.message
    return None


def _check(field: str, problem: str | None) -> None:
    if problem is not None:
        raise NameRefused(field, problem)


def _dig(payload: Mapping[str, Any], field: str) -> Any:
    """The value at ``field`` (``a.b.c``) of ``payload``, or None where it has none."""
    value: Any = payload
    for part in field.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value
