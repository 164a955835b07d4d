"""A git repository on the host: clone, branch, commit, push, and what a change touched.

Every method runs git as a subprocess (``golem.forge.gitcmd``); tokens reach git through
the environment only (``GitAuth``), asked of the run's ``GitLogin`` for each command that
talks to the remote; a command the remote refused for its token is run once more with a
fresh one. Commands on the work tree run isolated from the host's
git config (its files came from a box); the repository's own config is checked before each
command whenever it may have changed since its last check (its size and times, as the
kernel keeps them), though no box writes it (``golem.sandbox.takeback`` never lands a
``.git`` path).
Commands that reach a remote are held to the repository's ``RemotePolicy`` when it has one
(``golem.forge.remotes``).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from golem.core.errors import GitError
from golem.core.network import NetworkConfig, RemotePolicy
from golem.forge.auth import GitAuth, GitLogin
from golem.forge.diffstat import DiffStat, parse_numstat, parse_status_paths
from golem.forge.gitcmd import (
    GitOutput,
    check_ref_name,
    check_repository_config,
    git_environment,
    needs_safe_directory,
    refused_credentials,
    require_git,
    run_git,
    shareable_config,
)
from golem.forge.remotes import Reach, names_a_path, reach, withheld

__all__ = ["GitRepo"]

TRAILER_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
CHECKED_CONFIGS: dict[Path, tuple[int, ...]] = {}
"""Repositories whose ``.git/config`` passed the check, by the file's signature then."""
MAX_CHECKED = 512
SETTLED_NS = 100_000_000
"""Ten times the coarsest tick the kernel stamps files with (HZ=100)."""


def config_signature(path: Path) -> tuple[int, ...] | None:
    """What the kernel keeps of ``path/.git/config`` that any write changes (its change
    time cannot be set back); None when it is no plain file (then it is always read)."""
    try:
        info = os.lstat(path / ".git" / "config")
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def settled(signature: tuple[int, ...]) -> bool:
    """Whether the file was last changed well before now: a write that lands within the
    kernel's timestamp tick of an earlier one could leave its times as they were."""
    return signature[-1] <= time.time_ns() - SETTLED_NS


def remember_checked(path: Path, signature: tuple[int, ...]) -> None:
    """Skip the config check of ``path`` while its config keeps ``signature``."""
    if len(CHECKED_CONFIGS) >= MAX_CHECKED:
        CHECKED_CONFIGS.pop(next(iter(CHECKED_CONFIGS)))
    CHECKED_CONFIGS[path] = signature


class GitRepo:
    """A working tree at ``path``, worked on with the host's git.

    ``auth`` gives git a token for HTTPS remotes on its origin (a ``GitLogin`` is asked for
    it per command; a ``GitAuth`` is one token, always); without it, the host's own
    git config and credential helpers answer, unless ``host_credentials`` is false (a
    tenant's run: only ``auth`` is sent) or ``remote_policy`` is given: then every remote is
    checked against it (resolved as ``network`` says), git is pinned to what was checked and
    nothing of the host's credentials is used. ``timeout`` bounds each command.
    ``check_config`` refuses a repository whose own config holds more than a clone writes
    (golem's checkouts); a person's own repository (`golem agent`'s) is theirs to configure.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        auth: GitAuth | GitLogin | None = None,
        git: str = "git",
        timeout: float = 600.0,
        remote_policy: RemotePolicy | None = None,
        network: NetworkConfig | None = None,
        host_credentials: bool = True,
        check_config: bool = True,
    ) -> None:
        self.path = Path(path).absolute()
        self.auth = GitLogin.of(auth) if isinstance(auth, GitAuth) else auth
        self.git = git
        self.timeout = timeout
        self.remote_policy = remote_policy
        self.network = network
        self.host_credentials = host_credentials
        self.check_config = check_config

    def __repr__(self) -> str:
        return f"GitRepo({str(self.path)!r})"

    @classmethod
    async def clone(
        cls,
        source: str | Path,
        dest: str | Path,
        *,
        branch: str | None = None,
        depth: int | None = None,
        auth: GitAuth | GitLogin | None = None,
        git: str = "git",
        timeout: float = 600.0,
    ) -> GitRepo:
        """Clone ``source`` into ``dest`` (see ``clone_from``)."""
        repo = cls(dest, auth=auth, git=git, timeout=timeout)
        await repo.clone_from(source, branch=branch, depth=depth)
        return repo

    async def clone_from(
        self, source: str | Path, *, branch: str | None = None, depth: int | None = None
    ) -> None:
        """Clone ``source`` (a URL, a working tree or a bare repository) into this
        repository's path, which must not exist or be empty; ``branch`` checks out that
        branch. Local sources are copied, never hard-linked; the work tree is checked out
        isolated from the host's git config (no filter driver of the host's runs, so git-lfs
        content stays as its pointers)."""
        if urlsplit(str(source)).password is not None:
            raise GitError(
                "the clone URL carries a password or token, which would be kept in "
                ".git/config and shown in process lists: clone the plain URL and give the "
                "token through the forge's token_env (token_for_git) or a credential helper"
            )
        local = Path(source).expanduser()
        is_local = names_a_path(str(source)) and local.exists()
        # No checkout under the host's config: its filter drivers (git-lfs's, say) would run
        # on whatever .gitattributes the repository holds. The work tree is checked out by
        # an isolated command below.
        args = ["clone", "--quiet", "--no-hardlinks", "--no-checkout"]
        if branch is not None:
            args += ["--branch", check_ref_name(branch)]
        if depth is not None:
            args += ["--depth", str(depth)]
            if is_local:
                args.append("--no-local")
        origin = str(local.absolute()) if is_local else str(source)
        args += ["--", origin, str(self.path)]
        foreign = is_local and needs_safe_directory(local)
        safe = [local.absolute(), local.resolve()] if foreign else []
        await self._run(args, cwd=None, remote=True, urls=[origin], safe_directories=safe)
        if await self.head() is not None:
            await self._git(["reset", "--hard", "--quiet", "HEAD", "--"])

    async def head(self) -> str | None:
        """The commit checked out, or None in a repository with no commit yet."""
        return await self._resolve("HEAD")

    async def current_branch(self) -> str | None:
        """The branch checked out, or None when HEAD is detached."""
        out = await self._git(["symbolic-ref", "--quiet", "--short", "HEAD"], check=False)
        return out.text if out.returncode == 0 else None

    async def checkout_branch(self, name: str, start: str | None = None) -> None:
        """Check out branch ``name`` at ``start`` (default: HEAD), creating it, or moving
        it there if it exists. Uncommitted changes are carried along."""
        check_ref_name(name)
        commit = await self._resolve(start or "HEAD")
        if commit is None and start is not None:
            raise GitError(f"cannot branch {name} from {start!r}: no such commit or branch")
        if commit is None:
            await self._git(["symbolic-ref", "HEAD", f"refs/heads/{name}"])
            return
        await self._git(["checkout", "--quiet", "-B", name, commit, "--"])

    async def commit_all(
        self,
        message: str,
        author_name: str,
        author_email: str,
        *,
        trailers: Mapping[str, str] | None = None,
    ) -> str | None:
        """Stage every change (new, modified and deleted files, ``.gitignore`` honoured)
        and commit it as this author; returns the new commit, or None when nothing
        changed. ``trailers`` (``{"Golem-Run": "r-1"}``) end the message, for
        ``find_commit``."""
        full = _with_trailers(message, trailers or {})
        await self._git(["add", "--all"])
        staged = await self._git(["diff", "--cached", "--quiet", "--no-ext-diff"], check=False)
        if staged.returncode == 0:
            return None
        identity = {
            "GIT_AUTHOR_NAME": author_name,
            "GIT_AUTHOR_EMAIL": author_email,
            "GIT_COMMITTER_NAME": author_name,
            "GIT_COMMITTER_EMAIL": author_email,
        }
        await self._git(
            ["commit", "--quiet", "--no-verify", "--cleanup=strip", "--file=-"],
            stdin=full.encode(),
            extra_env=identity,
        )
        return await self.head()

    async def push(self, branch: str, remote: str = "origin", *, force: bool = False) -> None:
        """Push ``branch`` to the same name on ``remote``; ``force`` replaces it there
        unless it moved since it was last fetched (``--force-with-lease``)."""
        ref = f"refs/heads/{check_ref_name(branch)}"
        args = ["push", "--quiet"]
        if force:
            args.append("--force-with-lease")
        await self._git([*args, "--", remote, f"{ref}:{ref}"], remote=True, push=True)

    async def fetch(self, remote: str = "origin", branch: str | None = None) -> None:
        """Fetch ``remote`` (only ``branch``, when given) into its remote-tracking refs."""
        args = ["fetch", "--quiet", "--", remote]
        if branch is not None:
            name = check_ref_name(branch)
            args.append(f"+refs/heads/{name}:refs/remotes/{remote}/{name}")
        await self._git(args, remote=True)

    async def diff(self, base: str, *, text: bool = False) -> str:
        """The committed change since ``base`` forked: ``git diff base...HEAD``; ``text``
        shows binary files (and those a ``-diff`` attribute marks) as text too."""
        options = [*DIFF_OPTIONS, "--text"] if text else list(DIFF_OPTIONS)
        out = await self._git(["diff", *options, "--end-of-options", f"{base}...HEAD", "--"])
        return out.stdout.decode("utf-8", "replace")

    async def gitlinks(self) -> set[str]:
        """Paths the index holds as submodules (gitlinks): their content is another
        repository's, never this one's files."""
        out = await self._git(["ls-files", "--stage", "-z"])
        entries = out.stdout.decode("utf-8", "surrogateescape").split("\0")
        return {e.partition("\t")[2] for e in entries if e.startswith("160000 ")}

    async def diff_stat(self, base: str) -> DiffStat:
        """Files and line counts of ``diff(base)``, renames detected."""
        args = ["diff", *DIFF_OPTIONS, "--numstat", "-z", "-M"]
        out = await self._git([*args, "--end-of-options", f"{base}...HEAD", "--"])
        return parse_numstat(out.stdout.decode("utf-8", "surrogateescape"))

    async def worktree_diff_stat(self) -> DiffStat:
        """Files and line counts of the working tree against HEAD, untracked files included
        (added to a temporary index: the repository's own is left as it was)."""
        out = await self._worktree_diff(["--numstat", "-z", "-M"])
        return parse_numstat(out.decode("utf-8", "surrogateescape"))

    async def worktree_diff(self) -> str:
        """The working tree's change against HEAD as a patch, untracked files included
        (as ``worktree_diff_stat`` counts it)."""
        out = await self._worktree_diff(["-M"])
        return out.decode("utf-8", "replace")

    async def _worktree_diff(self, options: list[str]) -> bytes:
        with tempfile.TemporaryDirectory(prefix="golem-index-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            await self._git(["read-tree", "HEAD"], extra_env=env)
            await self._git(["add", "-A", "--", "."], extra_env=env)
            args = ["diff", *DIFF_OPTIONS, "--cached", *options]
            out = await self._git([*args, "--end-of-options", "HEAD", "--"], extra_env=env)
        return out.stdout

    async def changed_paths(self, base: str | None = None) -> list[str]:
        """Paths the committed change since ``base`` touched; without ``base``, paths
        with uncommitted changes (untracked files included, ignored ones not)."""
        if base is None:
            out = await self._git(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
            return parse_status_paths(out.stdout.decode("utf-8", "surrogateescape"))
        args = ["diff", *DIFF_OPTIONS, "--name-only", "-z", "--end-of-options"]
        out = await self._git([*args, f"{base}...HEAD", "--"])
        return [path for path in out.stdout.decode("utf-8", "surrogateescape").split("\0") if path]

    async def ignored(self, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` the repository's ignore rules ignore (tracked or not)."""
        if not paths:
            return set()
        out = await self._git(
            ["check-ignore", "--no-index", "--stdin", "-z"],
            stdin="\0".join(paths).encode("utf-8", "surrogateescape"),
            check=False,
        )
        if out.returncode not in (0, 1):  # 1: none of them is ignored
            raise GitError(f"git check-ignore failed in {self.path}: {out.stderr.strip()}")
        return {p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p}

    async def shareable_config(self, file: Path | None = None) -> str:
        """This repository's own config (or the config ``file``) as a file that may enter a
        box (see ``gitcmd.shareable_config``: no credential, no command)."""
        which = ["--file", str(file)] if file is not None else ["--local"]
        cwd = None if file is not None else self.path
        listing = await self._run(["config", *which, "--list", "-z"], cwd=cwd, check=False)
        return shareable_config(listing.stdout)

    async def is_clean(self) -> bool:
        """Whether nothing is modified, staged or untracked (ignored files aside)."""
        out = await self._git(["status", "--porcelain=v1", "-z", "--untracked-files=normal"])
        return not out.stdout

    async def default_branch(self, remote: str = "origin") -> str:
        """The remote's default branch: as recorded by the clone, else asked of it."""
        ref = f"refs/remotes/{remote}/HEAD"
        out = await self._git(["symbolic-ref", "--quiet", ref], check=False)
        if out.returncode == 0 and out.text.startswith(f"refs/remotes/{remote}/"):
            return out.text.removeprefix(f"refs/remotes/{remote}/")
        out = await self._git(["ls-remote", "--symref", "--", remote, "HEAD"], remote=True)
        for line in out.text.splitlines():
            target, _, name = line.partition("\t")
            if target.startswith("ref: refs/heads/") and name == "HEAD":
                return target.removeprefix("ref: refs/heads/")
        raise GitError(
            f"remote {remote!r} has no default branch (an empty repository?): push a first "
            "branch to it, or name the base branch explicitly"
        )

    async def remote_url(self, remote: str = "origin") -> str | None:
        """The URL of ``remote``, or None when there is no such remote."""
        out = await self._git(["remote", "get-url", "--", remote], check=False)
        return out.text if out.returncode == 0 else None

    async def find_commit(
        self, line: str, *, rev: str = "HEAD", base: str | None = None
    ) -> str | None:
        """The newest commit on ``rev`` (after ``base``, when given) whose message has
        ``line`` as one of its lines, such as a trailer ``Golem-Run: r-1``; None if no
        commit has it, or ``rev`` does not exist."""
        if await self._resolve(rev) is None:
            return None
        wanted = line.strip()
        args = ["log", "-z", "--format=%H%n%B", "--fixed-strings", f"--grep={wanted}"]
        revs = [rev] if base is None else [rev, f"^{base}"]
        out = await self._git([*args, "--end-of-options", *revs, "--"])
        for record in out.stdout.decode("utf-8", "replace").split("\0"):
            sha, _, body = record.strip("\n").partition("\n")
            if sha and any(candidate.strip() == wanted for candidate in body.splitlines()):
                return sha
        return None

    async def has_commit_with(
        self, line: str, *, rev: str = "HEAD", base: str | None = None
    ) -> bool:
        """Whether ``find_commit`` finds one: a resumed run checks this before it commits."""
        return await self.find_commit(line, rev=rev, base=base) is not None

    async def plumbing(self, args: Sequence[str], env: Mapping[str, str]) -> GitOutput:
        """A local git command of another module's (``golem.forge.snapshot``), run as this
        class runs its own: isolated from the host's config, the repository's checked."""
        return await self._git(args, extra_env=env)

    async def _resolve(self, rev: str) -> str | None:
        args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"]
        out = await self._git(args, check=False)
        return out.text if out.returncode == 0 else None

    async def _git(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        remote: bool = False,
        push: bool = False,
        stdin: bytes | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> GitOutput:
        """Run a git command in this repository, after checking its config is safe; a
        ``remote`` command's remote is the argument after ``--``."""
        safe = [self.path, self.path.resolve()] if self._foreign() else []
        if self.check_config:
            signature = config_signature(self.path)
            if signature is None or CHECKED_CONFIGS.get(self.path) != signature:
                listing = await self._run(
                    ["config", "--local", "--list", "-z"], cwd=self.path, safe_directories=safe
                )
                check_repository_config(self.path, listing.stdout)
                if signature is not None and settled(signature):
                    remember_checked(self.path, signature)
        urls = None
        if remote and self.remote_policy is not None:
            name = list(args)[list(args).index("--") + 1]
            urls = await self._remote_urls(name, safe, push=push)
        return await self._run(
            args,
            cwd=self.path,
            check=check,
            remote=remote,
            urls=urls,
            stdin=stdin,
            extra_env=extra_env,
            safe_directories=safe,
        )

    async def _remote_urls(self, name: str, safe: Sequence[Path], *, push: bool) -> list[str]:
        """Every URL git may reach for the remote ``name`` (itself, when it is a URL)."""
        urls: list[str] = []
        choices: list[list[str]] = [["--push"], []] if push else [[]]
        for which in choices:
            out = await self._run(
                ["remote", "get-url", "--all", *which, "--", name],
                cwd=self.path,
                check=False,
                safe_directories=safe,
            )
            urls += [line for line in out.text.splitlines() if line]
        return urls or [name]

    def _foreign(self) -> bool:
        return needs_safe_directory(self.path) or needs_safe_directory(self.path / ".git")

    async def _run(
        self,
        args: Sequence[str],
        *,
        cwd: Path | None,
        check: bool = True,
        remote: bool = False,
        urls: Sequence[str] | None = None,
        stdin: bytes | None = None,
        extra_env: Mapping[str, str] | None = None,
        safe_directories: Sequence[Path] = (),
    ) -> GitOutput:
        """Run git: a local command isolated from the host's git config; a ``remote`` one
        with the host's config and credentials, or, under a remote policy, sealed and
        pinned to the checked ``urls``."""
        policy = self.remote_policy if remote else None
        require_git(self.git, pinned=policy is not None)  # one `git --version`, then cached
        way = Reach()
        if remote:
            way = await reach(
                urls or [], policy, self.network, host_credentials=self.host_credentials
            )
        if cwd is not None and not cwd.is_dir():
            raise GitError(f"{cwd} does not exist: clone the repository there first")
        login = self.auth if remote else None
        auth = await login.auth() if login is not None else None

        async def attempt(auth: GitAuth | None) -> GitOutput:
            env = git_environment(
                [*(auth.git_config() if auth is not None else []), *way.config],
                safe_directories=safe_directories,
                extra={**(extra_env or {}), **way.env},
                isolated=not remote,
                sealed=way.sealed,
            )
            return await run_git(
                self.git,
                args,
                cwd=cwd,
                env=env,
                secrets=auth.secrets() if auth is not None else (),
                stdin=stdin,
                timeout=self.timeout,
                check=check,
                remote=remote,
            )

        try:
            try:
                return await attempt(auth)
            except GitError as exc:  # the token expired or was revoked: once, a fresh one
                if login is None or auth is None or not refused_credentials(exc):
                    raise
                fresh = await login.refreshed(auth)
                if fresh is None:
                    raise
                return await attempt(fresh)
        except GitError as exc:
            if policy is None or policy.git_errors:
                raise
            raise withheld(args, urls or [], exc) from None


DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv")


def _with_trailers(message: str, trailers: Mapping[str, str]) -> str:
    for key, value in trailers.items():
        if not TRAILER_KEY.match(key) or "\n" in value:
            raise GitError(
                f"trailer {key!r}: {value!r} cannot be written: keys are letters, digits and "
                "'-', values a single line"
            )
    lines = [f"{key}: {value}" for key, value in trailers.items()]
    body = message.strip()
    return f"{body}\n\n" + "\n".join(lines) + "\n" if lines else body + "\n"
