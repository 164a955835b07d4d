"""The host git an evaluation does: the repositories tasks come from (cloned once, kept under
``<state_dir>/eval/sources``), and small bare repositories made per task and attempt, whose
trees are built without a work tree (a scratch index): the base with the hidden tests laid
over it, the agent's work with them laid over it.

Every command goes through ``golem.forge.GitRepo`` (so through ``golem.forge.gitcmd``):
local commands run isolated from the host's git config, as on trees whose files came from a
box (the agent's work did).
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from pathlib import Path

from golem.checks import RepoConventions, load_conventions
from golem.core.config import GolemConfig
from golem.core.errors import EvalError, GitError
from golem.forge import ForgeCredentials, GitRepo, git_auth

__all__ = ["AGENT_BRANCH", "Sources", "Trees", "new_bare", "only_the_base"]

AGENT_BRANCH = "main"
IDENTITY = {
    "GIT_AUTHOR_NAME": "golem eval",
    "GIT_AUTHOR_EMAIL": "golem-eval@localhost",
    "GIT_COMMITTER_NAME": "golem eval",
    "GIT_COMMITTER_EMAIL": "golem-eval@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
DIFF = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames")


class Sources:
    """Host clones of the repositories tasks come from, one per URL or path: cloned when
    first asked for, fetched once per process after that."""

    def __init__(self, config: GolemConfig) -> None:
        self.config = config
        self.root = config.state_dir / "eval" / "sources"
        self._locks: dict[str, asyncio.Lock] = {}
        self._fresh: set[str] = set()

    async def get(self, url: str) -> GitRepo:
        """The clone of ``url``, up to date (an EvalError saying why when it cannot be had)."""
        lock = self._locks.setdefault(url, asyncio.Lock())
        async with lock:
            repo = self._repo(url)
            try:
                if not (repo.path / ".git").is_dir():
                    repo.path.parent.mkdir(parents=True, exist_ok=True)
                    await repo.clone_from(url)
                elif url not in self._fresh:
                    await repo.fetch()
            except GitError as exc:
                raise EvalError(f"cannot fetch the repository {url}: {exc.message}") from exc
            self._fresh.add(url)
            return repo

    async def have(self, url: str, commit: str) -> GitRepo:
        """The clone of ``url`` holding ``commit`` (fetched by its id when no branch has
        it, as forges allow)."""
        repo = await self.get(url)
        async with self._locks[url]:
            if await _has(repo, commit):
                return repo
            try:
                await repo.plumbing(["fetch", "--quiet", "--no-tags", "origin", commit], {})
            except GitError as exc:
                raise EvalError(
                    f"the repository {url} has no commit {commit}: {exc.message}"
                ) from exc
        return repo

    async def conventions_at(self, url: str, commit: str) -> RepoConventions:
        """The repository's checks at ``commit`` (its .golem.toml, or what golem detects),
        read from the clone's work tree checked out there."""
        repo = await self.have(url, commit)
        async with self._locks[url]:
            await repo.plumbing(["checkout", "--quiet", "--force", "--detach", commit, "--"], {})
            return await asyncio.to_thread(load_conventions, repo.path)

    def _repo(self, url: str) -> GitRepo:
        digest = hashlib.sha256(url.encode()).hexdigest()[:20]
        forge = self.config.forge
        return GitRepo(
            self.root / digest,
            auth=git_auth(forge, url, ForgeCredentials.from_config(forge, self.config.state_dir)),
            timeout=forge.git_timeout,
        )


async def new_bare(path: Path) -> GitRepo:
    """A new, empty bare repository at ``path`` whose default branch is ``main``."""
    path.mkdir(parents=True)
    repo = GitRepo(path, check_config=False)
    await repo.plumbing(["init", "--quiet", "--bare", "--initial-branch", AGENT_BRANCH], {})
    return GitRepo(path)


async def only_the_base(path: Path, source: GitRepo, base: str) -> GitRepo:
    """A bare repository holding ``base`` and its history, and nothing else: one branch,
    ``main``, at ``base``; no tag, no other branch, no object of a later commit (the
    remote an agent clones: what it could read of the future, it could copy)."""
    repo = await new_bare(path)
    await repo.plumbing(
        ["fetch", "--quiet", "--no-tags", str(source.path), f"{base}:refs/heads/{AGENT_BRANCH}"],
        {},
    )
    refs = (await repo.plumbing(["for-each-ref", "--format=%(refname) %(objectname)"], {})).text
    alternates = path / "objects" / "info" / "alternates"
    if refs != f"refs/heads/{AGENT_BRANCH} {base}" or alternates.exists():
        raise EvalError(f"golem could not make a repository holding only {base} ({path})")
    return repo


class Trees:
    """Trees and commits built in one bare repository, on a scratch index."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo

    async def fetch(self, source: Path, commit: str, ref: str) -> None:
        """Fetch ``commit`` (and its history) of the repository at ``source`` as ``ref``."""
        await self.repo.plumbing(
            ["fetch", "--quiet", "--no-tags", str(source), f"{commit}:{ref}"], {}
        )

    async def overlay(self, onto: str, source: str, paths: list[str]) -> str:
        """``onto``'s tree with each of ``paths`` as ``source`` has it (removed where
        ``source`` has none)."""
        with tempfile.TemporaryDirectory(prefix="golem-eval-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            await self.repo.plumbing(["read-tree", onto], env)
            if paths:
                listing = await self.repo.plumbing(
                    ["ls-tree", "-r", "-z", source, "--", *paths], env
                )
                entries = [
                    e for e in listing.stdout.decode("utf-8", "surrogateescape").split("\0") if e
                ]
                found = {e.partition("\t")[2]: e.partition("\t")[0].split() for e in entries}
                gone = [path for path in paths if path not in found]
                if gone:
                    await self.repo.plumbing(["update-index", "--force-remove", "--", *gone], env)
                infos = [f"{m},{sha},{path}" for path, (m, _, sha) in found.items()]
                args = [arg for info in infos for arg in ("--cacheinfo", info)]
                if args:
                    await self.repo.plumbing(["update-index", "--add", *args], env)
            return (await self.repo.plumbing(["write-tree"], env)).text

    async def applied(self, onto: str, patch: str) -> str:
        """``onto``'s tree with ``patch`` applied (a GitError when it does not apply)."""
        with tempfile.TemporaryDirectory(prefix="golem-eval-") as scratch:
            file = Path(scratch) / "change.patch"
            file.write_text(patch if patch.endswith("\n") or not patch else patch + "\n")
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            await self.repo.plumbing(["read-tree", onto], env)
            if patch.strip():
                await self.repo.plumbing(
                    ["apply", "--cached", "--whitespace=nowarn", str(file)], env
                )
            return (await self.repo.plumbing(["write-tree"], env)).text

    async def commit(self, tree: str, parent: str, message: str, branch: str | None = None) -> str:
        """A commit of ``tree`` after ``parent``; ``branch`` (when given) points at it."""
        done = await self.repo.plumbing(
            ["commit-tree", tree, "-p", parent, "-m", message], IDENTITY
        )
        if branch is not None:
            await self.repo.plumbing(["update-ref", f"refs/heads/{branch}", done.text], {})
        return done.text

    async def changed(self, before: str, after: str) -> list[str]:
        """The paths that differ between two trees (or commits)."""
        out = await self.repo.plumbing(
            ["diff-tree", "-r", "-z", "--name-only", "--no-renames", before, after], {}
        )
        return [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]

    async def diff(self, before: str, after: str, paths: list[str] | None = None) -> str:
        """The patch from ``before`` to ``after`` (of ``paths`` only, when given), binary
        files included, as ``git apply`` takes it."""
        if paths == []:
            return ""
        out = await self.repo.plumbing([*DIFF, "--binary", before, after, "--", *(paths or [])], {})
        return out.stdout.decode("utf-8", "replace")

    async def tree_of(self, rev: str) -> str:
        """The tree of a commit."""
        return (await self.repo.plumbing(["rev-parse", f"{rev}^{{tree}}"], {})).text


async def work_tree_commit(checkout: GitRepo, base: str, ref: str) -> str:
    """The work tree of ``checkout`` (every file git would add, committed or not) as a
    commit after ``base``, kept as ``ref`` there (so it can be fetched)."""
    with tempfile.TemporaryDirectory(prefix="golem-eval-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), **IDENTITY}
        await checkout.plumbing(["read-tree", "HEAD"], env)
        await checkout.plumbing(["add", "--all"], env)
        tree = (await checkout.plumbing(["write-tree"], env)).text
        commit = await checkout.plumbing(["commit-tree", tree, "-p", base, "-m", "work"], env)
        await checkout.plumbing(["update-ref", ref, commit.text], {})
        return commit.text


async def _has(repo: GitRepo, commit: str) -> bool:
    try:
        await repo.plumbing(["cat-file", "-e", f"{commit}^{{commit}}"], {})
    except GitError:
        return False
    return True
