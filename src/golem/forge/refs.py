"""Issue references as people write them: ``https://github.com/o/r/issues/12``, ``o/r#12``;
GitLab's ``group/sub/project#12`` and ``group/sub/project!12`` (a merge request)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from golem.core.errors import ForgeRequestRejected, IssueNotReadable

__all__ = [
    "GitLabRef",
    "IssueRef",
    "closed_issues",
    "is_project_path",
    "is_repo_name",
    "parse_gitlab_ref",
    "parse_issue_ref",
    "split_project",
    "split_repo",
]

NAME = r"(?!\.{1,2}(?![A-Za-z0-9._-]))[A-Za-z0-9._][A-Za-z0-9._-]{0,99}"
"""One part of a repository's or project's path: letters, digits, '.', '_' and '-', not
starting with '-', and never '.' or '..' (which a URL path would read as a step)."""
SHORT = re.compile(rf"^({NAME})/({NAME})#(\d+)$")
WEB_PATH = re.compile(rf"^/({NAME})/({NAME})/(?:issues|pull|pulls)/(\d+)/?$")
REPO = re.compile(rf"^({NAME})/({NAME})$")
CLOSING = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?[ \t]+#(\d+)\b", re.I)


@dataclass(frozen=True)
class IssueRef:
    """An issue (or pull request) on a forge: ``owner/name#number``, and the web host it
    was named on, if a URL named it."""

    owner: str
    name: str
    number: int
    host: str | None = None

    @property
    def repo(self) -> str:
        """``owner/name``."""
        return f"{self.owner}/{self.name}"

    def __str__(self) -> str:
        return f"{self.repo}#{self.number}"


def closed_issues(text: str) -> list[int]:
    """The issues of its own repository a pull request's text closes, as GitHub and GitLab
    read it: ``Fixes #12``, ``closes #3``, ``Resolved: #7``; in order, once each."""
    return list(dict.fromkeys(int(number) for number in CLOSING.findall(text)))


def parse_issue_ref(ref: str) -> IssueRef:
    """Parse ``https://HOST/o/r/issues/N`` (or ``/pull/N``) or ``o/r#N``."""
    text = ref.strip()
    if short := SHORT.match(text):
        return IssueRef(short[1], short[2], int(short[3]))
    parts = urlsplit(text)
    web = WEB_PATH.match(parts.path)
    if parts.scheme in ("http", "https") and parts.hostname and web:
        return IssueRef(web[1], web[2], int(web[3]), parts.hostname)
    raise IssueNotReadable(
        f"{ref!r} is not an issue reference: write https://github.com/OWNER/REPO/issues/N "
        "or OWNER/REPO#N (or give the local forge a .md, .yaml or .json file)"
    )


def is_repo_name(text: str) -> bool:
    """Whether ``text`` is a GitHub repository's ``owner/name``, exactly (each part a name
    that stays one segment of a URL path)."""
    return REPO.fullmatch(text) is not None


def split_repo(repo: str) -> tuple[str, str]:
    """``owner/name`` (a trailing ``.git`` or a github URL allowed) as its two parts."""
    text = repo.strip().removesuffix(".git").removesuffix("/")
    parts = urlsplit(text)
    if parts.scheme in ("http", "https"):
        text = parts.path.strip("/")
    if match := REPO.match(text):
        return match[1], match[2]
    raise ForgeRequestRejected(
        f"{repo!r} does not name a GitHub repository: write OWNER/REPO or its https:// URL"
    )


GITLAB_PATH = rf"{NAME}(?:/{NAME})+"
GITLAB_SHORT = re.compile(rf"^({GITLAB_PATH})([#!])(\d+)$")
GITLAB_WEB_PATH = re.compile(rf"^/({GITLAB_PATH})/-/(issues|merge_requests)/(\d+)/?$")
GITLAB_PROJECT = re.compile(rf"^{GITLAB_PATH}$")


@dataclass(frozen=True)
class GitLabRef:
    """An issue (``group/project#N``) or merge request (``group/project!N``) on GitLab,
    whose projects may sit in nested groups; and the web host, if a URL named it."""

    project: str
    iid: int
    merge_request: bool = False
    host: str | None = None

    def __str__(self) -> str:
        return f"{self.project}{'!' if self.merge_request else '#'}{self.iid}"


def parse_gitlab_ref(ref: str) -> GitLabRef:
    """Parse ``group/sub/project#N`` (an issue), ``group/sub/project!N`` (a merge request),
    or their web URLs ``https://HOST/group/project/-/issues/N`` and ``.../-/merge_requests/N``."""
    text = ref.strip()
    if short := GITLAB_SHORT.match(text):
        return GitLabRef(short[1], int(short[3]), short[2] == "!")
    parts = urlsplit(text)
    web = GITLAB_WEB_PATH.match(parts.path)
    if parts.scheme in ("http", "https") and parts.hostname and web:
        return GitLabRef(web[1], int(web[3]), web[2] == "merge_requests", parts.hostname)
    raise IssueNotReadable(
        f"{ref!r} is not a GitLab issue or merge request: write GROUP/PROJECT#N (an issue), "
        "GROUP/PROJECT!N (a merge request), or their https://HOST/GROUP/PROJECT/-/issues/N "
        "or /-/merge_requests/N URL"
    )


def is_project_path(text: str) -> bool:
    """Whether ``text`` is a GitLab project's path (``group/sub/project``), exactly."""
    return GITLAB_PROJECT.fullmatch(text) is not None


def split_project(repo: str) -> str:
    """A GitLab project's path (``group/sub/project``) from itself or its https URL (a
    trailing ``.git`` allowed)."""
    text = repo.strip().removesuffix("/").removesuffix(".git")
    parts = urlsplit(text)
    if parts.scheme in ("http", "https"):
        text = parts.path.strip("/")
    if GITLAB_PROJECT.match(text):
        return text
    raise ForgeRequestRejected(
        f"{repo!r} does not name a GitLab project: write GROUP/PROJECT (subgroups allowed) "
        "or its https:// URL"
    )
