"""The changes a task set is made from: commits of a range (plain git history, any
repository), or the pull requests merged last (GitHub's and GitLab's through golem's forge
clients; the local forge's, as merge commits of the default branch). Each is a base (the
commit's, or the merge's, first parent), the commit whose tree is the change made, and what
the task says: the commit's message, or the pull request's linked issue (else its title and
body)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from golem.core.config import GolemConfig
from golem.core.errors import EvalError, ForgeError, GitError
from golem.forge import (
    ForgeCredentials,
    GitRepo,
    Issue,
    LocalForge,
    MergedPullRequest,
    make_forge,
)
from golem.store import Store

__all__ = ["Candidate", "from_commits", "from_merged_pull_requests", "slug"]

RANGE = re.compile(r"^([^\s.][^\s]*?)\.\.([^\s.][^\s]*)$")


@dataclass(frozen=True)
class Candidate:
    """A change that may become a task."""

    instance_id: str
    base: str
    change: str
    statement: str
    created_at: str
    source: str
    hints: str = ""


def slug(repo: str) -> str:
    """A repository's name as SWE-bench writes it in an instance id: ``owner__name``; a
    path or URL by its last part."""
    cleaned = repo.rstrip("/").removesuffix(".git")
    parts = [part for part in re.split(r"[/:]", cleaned) if part]
    name = "__".join(parts[-2:]) if "://" not in repo and len(parts) == 2 else parts[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "repo"


async def from_commits(source: GitRepo, repo: str, commits: str) -> list[Candidate]:
    """The commits of range ``A..B`` (the first-parent line: a merged branch is its merge
    commit), oldest first."""
    if not RANGE.match(commits):
        raise EvalError(f"--commits {commits!r} is not a range: give A..B (e.g. v1.0..main)")
    try:
        listing = await source.plumbing(
            [
                "log",
                "--first-parent",
                "--reverse",
                "-z",
                "--format=%H%x00%P%x00%cI%x00%B",
                "--end-of-options",
                commits,
                "--",
            ],
            {},
        )
    except GitError as exc:
        raise EvalError(f"cannot read the commits {commits}: {exc.message}") from exc
    fields = listing.stdout.decode("utf-8", "replace").split("\0")
    found = []
    for field, parents, date, message in zip(*[iter(fields)] * 4, strict=False):
        sha = field.strip()
        if not sha or not parents.split():
            continue  # a root commit has no base to start from
        found.append(
            Candidate(
                instance_id=f"{slug(repo)}-{sha[:12]}",
                base=parents.split()[0],
                change=sha,
                statement=message.strip(),
                created_at=date,
                source=f"commit {sha}",
            )
        )
    return found


async def from_merged_pull_requests(
    config: GolemConfig, store: Store, forge_name: str, repo: str, source: GitRepo, limit: int
) -> list[Candidate]:
    """The ``limit`` pull requests of ``repo`` merged last on ``forge_name``, oldest first."""
    if forge_name == "local":
        merged = await _local_merges(store, repo, source, limit)
    else:
        credentials = ForgeCredentials.from_config(config.forge, config.state_dir)
        forge = make_forge(forge_name, config.forge, store, credentials)
        lister = getattr(forge, "merged_pull_requests", None)
        if lister is None:
            raise EvalError(f"the {forge_name} forge cannot list merged pull requests")
        merged = await lister(repo, limit)
        merged = [await _with_issue(forge, repo, pr) for pr in merged]
    candidates = []
    for pr, issue in reversed(merged):
        if not pr.merge_commit:
            continue
        base = await _first_parent(source, pr.merge_commit)
        statement = f"{issue.title}\n\n{issue.body}".strip() if issue else pr.title
        if issue is None and pr.body.strip():
            statement += f"\n\n{pr.body.strip()}"
        hints = "\n\n".join(c.body for c in issue.comments) if issue else ""
        candidates.append(
            Candidate(
                instance_id=f"{slug(repo)}-{pr.number or pr.merge_commit[:12]}",
                base=base,
                change=pr.merge_commit,
                statement=statement,
                created_at=pr.merged_at,
                hints=hints,
                source=f"{forge_name} pull request {repo}#{pr.number}",
            )
        )
    return candidates


async def _with_issue(
    forge: object, repo: str, pr: MergedPullRequest
) -> tuple[MergedPullRequest, Issue | None]:
    """The pull request with the first issue it closes (None: none, or not readable)."""
    fetch = getattr(forge, "fetch_issue", None)
    for number in pr.closes[:1]:
        try:
            return pr, await fetch(f"{repo}#{number}") if fetch else None
        except ForgeError:
            return pr, None
    return pr, None


async def _first_parent(source: GitRepo, commit: str) -> str:
    try:
        return (await source.plumbing(["rev-parse", "--verify", f"{commit}^1"], {})).text
    except GitError as exc:
        raise EvalError(
            f"the merge commit {commit} is not in the repository's history (is it fetched, "
            f"and does --clone name the right repository?): {exc.message}"
        ) from exc


async def _local_merges(
    store: Store, repo: str, source: GitRepo, limit: int
) -> list[tuple[MergedPullRequest, Issue | None]]:
    """The merge commits of the default branch (first-parent line), newest first; each
    one's pull request is the local forge's whose branch its message names, if any."""
    listing = await source.plumbing(
        [
            "log",
            "--first-parent",
            "--merges",
            "-z",
            f"-n{limit}",
            "--format=%H%x00%cI%x00%B",
            "HEAD",
            "--",
        ],
        {},
    )
    fields = listing.stdout.decode("utf-8", "replace").split("\0")
    recorded = await LocalForge(store).pull_requests(repo)
    merged: list[tuple[MergedPullRequest, Issue | None]] = []
    for field, date, message in zip(*[iter(fields)] * 3, strict=False):
        sha = field.strip()
        if not sha:
            continue
        pr = next((p for p in recorded if p.head and p.head in message), None)
        title, _, body = message.strip().partition("\n")
        merged.append(
            (
                MergedPullRequest(
                    number=pr.number if pr else 0,
                    title=pr.title if pr else title,
                    body=pr.body if pr else body.strip(),
                    url=pr.url if pr else None,
                    merge_commit=sha,
                    merged_at=date,
                ),
                None,
            )
        )
    return merged
