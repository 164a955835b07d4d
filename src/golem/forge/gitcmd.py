"""Running git on the host: one subprocess per command, argv lists only, never a shell.
Every git command golem runs on the host goes through here (``run_git``, or
``run_git_blocking`` for code already on a worker thread).

Every command gets ``GIT_TERMINAL_PROMPT=0``, English messages, and golem's own config
through ``GIT_CONFIG_*`` variables (command scope, which outranks the repository's own
config): hooks off, fsmonitor off, the ``ext::`` transport off, a token's header when one
is given, and ``safe.directory`` for a repository another user owns. A command on a work
tree whose files came from a box runs ``isolated``: no system or global config, no
``GIT_*`` variable of the host's and no attributes file of the host's, so no filter, diff
driver or helper the host configured can be reached through the tree's ``.gitattributes``.
A command under a remote policy runs ``sealed`` as well: no netrc, ssh agent or proxy of
the host's either. Failures become ``GitError``s whose text has every token masked.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from golem.core.errors import GitError, GitPushRejected, GitRemoteError, UnsafeRepository
from golem.forge.auth import mask

__all__ = [
    "GitOutput",
    "check_repository_config",
    "git_environment",
    "needs_safe_directory",
    "refused_credentials",
    "require_git",
    "run_git",
    "run_git_blocking",
    "shareable_config",
]

# No box writes a checkout's .git; still, nothing in a repository may make host git run code.
PROTECTIVE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("protocol.ext.allow", "never"),
)

# Variables that would point git at another repository than the one asked for.
REPOSITORY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_COMMON_DIR",
)

SAFE_KEYS = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "core.autocrlf",
        "core.eol",
        "core.safecrlf",
        "core.sparsecheckout",
        "core.sparsecheckoutcone",
        "core.quotepath",
        "extensions.objectformat",
        "extensions.partialclone",
        "index.version",
        "init.defaultbranch",
        "user.name",
        "user.email",
        "pull.rebase",
        "pull.ff",
        "gc.auto",
        "lfs.repositoryformatversion",
    }
)
SAFE_SUBSECTION_KEYS = {
    "remote": frozenset({"url", "pushurl", "fetch", "tagopt", "promisor", "partialclonefilter"}),
    "branch": frozenset({"remote", "merge", "rebase"}),
}


@dataclass(frozen=True)
class GitOutput:
    """What a git command printed."""

    stdout: bytes
    stderr: str
    returncode: int

    @property
    def text(self) -> str:
        """stdout as text, without its final newline (paths keep undecodable bytes)."""
        return self.stdout.decode("utf-8", "surrogateescape").removesuffix("\n")


def needs_safe_directory(path: Path) -> bool:
    """Whether git would call ``path`` of dubious ownership (another user owns it)."""
    try:
        return path.stat().st_uid != os.geteuid()
    except OSError:
        return False


# Variables through which the host's own credentials or routes would reach a remote.
HOST_CREDENTIAL_VARIABLES = (
    "SSH_AUTH_SOCK",
    "SSH_ASKPASS",
    "GIT_ASKPASS",
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "CURL_CA_BUNDLE",
)


def git_environment(
    config: Iterable[tuple[str, str]] = (),
    *,
    safe_directories: Iterable[Path] = (),
    extra: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
    isolated: bool = False,
    sealed: bool = False,
) -> dict[str, str]:
    """The environment of one git command: by default the host's (its git config and
    credential helpers included), golem's config entries appended after any the host set;
    ``isolated``: none of the host's git config or ``GIT_*`` variables; ``sealed``:
    isolated, and none of the host's credentials (netrc, ssh agent) or proxies."""
    env = dict(os.environ if base is None else base)
    for name in REPOSITORY_VARIABLES:
        env.pop(name, None)
    entries = list(PROTECTIVE_CONFIG)
    if isolated or sealed:
        env = {name: value for name, value in env.items() if not name.startswith("GIT_")}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1")
        entries.append(("core.attributesFile", os.devnull))
    if sealed:
        for name in HOST_CREDENTIAL_VARIABLES:
            env.pop(name, None)
        env["HOME"] = "/nonexistent"  # no ~/.netrc for curl, no ~/.ssh for ssh's -F
    entries += list(config)
    entries += [("safe.directory", str(path)) for path in safe_directories]
    count = int(env["GIT_CONFIG_COUNT"]) if env.get("GIT_CONFIG_COUNT", "").isdigit() else 0
    for key, value in entries:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    env.update(extra or {})
    return env


async def run_git(
    git: str,
    args: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str],
    secrets: Sequence[str] = (),
    stdin: bytes | None = None,
    timeout: float = 600.0,
    check: bool = True,
    remote: bool = False,
) -> GitOutput:
    """Run ``git args`` and return its output; with ``check``, a non-zero exit raises a
    ``GitError`` (for a command that talks to a ``remote``: the fitting subclass)."""
    argv = [git, *args]
    shown = mask(" ".join(["git", *args]), secrets)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise GitError(
            f"cannot run {git!r} ({exc.strerror}): install git, or check the configured path",
            command=shown,
        ) from exc
    try:
        async with asyncio.timeout(timeout):
            stdout, stderr_bytes = await process.communicate(stdin)
    except TimeoutError as exc:
        raise GitError(
            f"{shown} took longer than {timeout:g} s and was stopped: check the network and "
            "the remote, or raise the git timeout",
            command=shown,
        ) from exc
    finally:
        if process.returncode is None:
            # git's helpers (ssh, git-remote-https) share its session: end them all.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    stderr = mask(stderr_bytes.decode("utf-8", "replace"), secrets)
    result = GitOutput(stdout, stderr, process.returncode or 0)
    if check and result.returncode != 0:
        raise classify_failure(shown, result, remote=remote)
    return result


MIN_GIT = (2, 32)
"""Command-scope config (``GIT_CONFIG_COUNT``, 2.31) and ``GIT_CONFIG_GLOBAL`` (2.32) carry
golem's hardening; an older git would ignore them, silently."""
MIN_GIT_PINNED = (2, 37)
"""``http.curloptResolve`` (2.37) pins a remote policy's checked address."""


@functools.cache
def git_version(git: str) -> tuple[int, int] | None:
    """``git --version`` as (major, minor); None when it cannot tell (a git that does not
    start or answer fails the command itself, with its own error)."""
    env = git_environment(isolated=True)
    done = run_git_blocking(git, ["--version"], cwd=None, env=env, timeout=5)
    found = re.search(r"(\d+)\.(\d+)", done.stdout.decode("utf-8", "replace"))
    return (int(found.group(1)), int(found.group(2))) if found else None


def require_git(git: str, *, pinned: bool = False) -> None:
    """Refuse a git too old to honour golem's hardening (and, ``pinned``, a remote
    policy's pin), rather than run it unprotected."""
    needed = MIN_GIT_PINNED if pinned else MIN_GIT
    found = git_version(git)
    if found is not None and found < needed:
        why = (
            "a remote policy's address pin (http.curloptResolve)"
            if pinned
            else ("golem's hardening (command-scope config, GIT_CONFIG_GLOBAL)")
        )
        raise GitError(
            f"{git} is version {found[0]}.{found[1]}; golem needs git "
            f"{needed[0]}.{needed[1]} or newer for {why}: install a newer git (Debian 12 "
            "and Ubuntu 24.04 have one)"
        )


def run_git_blocking(
    git: str,
    args: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str],
    timeout: float = 60.0,
    stdin: bytes | None = None,
) -> GitOutput:
    """``run_git`` for code that already runs on a worker thread (context hydration):
    the same environment and argv rules; ``stdin`` is its input (else an empty one); a
    command that cannot start, or runs past ``timeout``, gives returncode -1."""
    try:
        done = subprocess.run(
            [git, *args],
            cwd=cwd,
            env=dict(env),
            input=stdin or b"",
            capture_output=True,
            timeout=timeout,
            check=False,
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return GitOutput(b"", str(exc), -1)
    return GitOutput(done.stdout, done.stderr.decode("utf-8", "replace"), done.returncode)


def _said(stderr: str, limit: int = 600) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " | ".join(lines[-6:])
    return text if len(text) <= limit else "..." + text[-limit:]


REMOTE_PATTERNS = (
    ("could not read username", "credentials"),
    ("authentication failed", "credentials"),
    ("terminal prompts disabled", "credentials"),
    ("returned error: 401", "credentials"),
    ("returned error: 403", "credentials"),
    ("permission denied (publickey", "credentials"),
    ("no such remote", "missing"),
    ("does not exist", "missing"),
    ("does not appear to be a git repository", "missing"),
    ("repository not found", "missing"),
    ("not found", "missing"),
    ("could not resolve host", "unreachable"),
    ("unable to access", "unreachable"),
    ("could not read from remote repository", "unreachable"),
    ("connection refused", "unreachable"),
)

REMOTE_ADVICE = {
    "credentials": "git could not authenticate: give golem a token for HTTPS remotes, or set "
    "up the host's git credentials (a credential helper, or an ssh key for ssh remotes)",
    "missing": "no such remote or repository: check the remote's name and URL, and that the "
    "repository exists and the credentials can see it",
    "unreachable": "git cannot reach the remote: check the URL, the network and any proxy",
}


LOCAL_ADVICE = (
    (
        "index.lock",
        "another git process holds the index, or one was killed: if none is "
        "running in this repository, delete .git/index.lock",
    ),
    ("unknown revision", "no such branch or commit: fetch it, or check its name"),
    ("bad revision", "no such branch or commit: fetch it, or check its name"),
    ("not a git repository", "this directory is not a git repository: clone one there first"),
)


def classify_failure(command: str, result: GitOutput, *, remote: bool = False) -> GitError:
    """The ``GitError`` that says what went wrong with ``command`` and what to do."""
    lowered = result.stderr.lower()
    kind, advice = _diagnose(lowered) if remote else (GitError, "")
    if not advice:
        advice = next((text for pattern, text in LOCAL_ADVICE if pattern in lowered), "")
    said = f"(git said: {_said(result.stderr)})"
    message = (
        f"{command}: {advice} {said}"
        if advice
        else f"{command} failed with exit code {result.returncode} {said}"
    )
    return kind(message, command=command, returncode=result.returncode, output=result.stderr)


def refused_credentials(error: GitError) -> bool:
    """Whether git failed because the remote refused (or wanted) credentials: a 401 or
    403, "authentication failed", no user name to give."""
    said = error.output.lower()
    return any(pattern in said for pattern, kind in REMOTE_PATTERNS if kind == "credentials")


def _diagnose(stderr: str) -> tuple[type[GitError], str]:
    if "[rejected]" in stderr or "non-fast-forward" in stderr or "fetch first" in stderr:
        return GitPushRejected, (
            "the remote has commits this branch lacks (not a fast-forward); fetch and rebase "
            "onto it, or push with force to replace it"
        )
    if "[remote rejected]" in stderr or "pre-receive hook declined" in stderr:
        return GitPushRejected, (
            "the remote refused the push (a hook or a branch protection rule); read its "
            "reason, then push to another branch or change the rule"
        )
    for pattern, kind in REMOTE_PATTERNS:
        if pattern in stderr:
            return GitRemoteError, REMOTE_ADVICE[kind]
    return GitError, ""


def _is_safe_key(key: str) -> bool:
    if key in SAFE_KEYS:
        return True
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    return bool(subsection) and name.lower() in SAFE_SUBSECTION_KEYS.get(section, frozenset())


def check_repository_config(path: Path, config_listing: bytes) -> None:
    """Refuse a repository whose own config (``git config --local --list -z``) sets a key
    outside the plain ones a clone writes: hooks, filters, pagers, helpers and includes
    would run commands on the host, and the box can write that file."""
    entries = [entry for entry in config_listing.split(b"\0") if entry]
    keys = [entry.split(b"\n", 1)[0].decode("utf-8", "replace") for entry in entries]
    unsafe = sorted({key for key in keys if not _is_safe_key(key)})
    if unsafe:
        shown = ", ".join(unsafe[:8]) + (" ..." if len(unsafe) > 8 else "")
        raise UnsafeRepository(
            f"{path}/.git/config sets {shown}, which golem does not let the repository set: "
            "such keys can make git run commands on the host, and the box can write that "
            "file. Remove them (git config --local --unset KEY) or clone the repository again"
        )


def shareable_config(config_listing: bytes) -> str:
    """A repository's own config (``git config --local --list -z``) as a config file that
    may enter a box: only the plain keys a clone writes, URLs without user or password, so
    a token kept there (actions/checkout's extraheader, a URL with credentials) stays on
    the host."""
    lines: list[str] = []
    for entry in (e for e in config_listing.split(b"\0") if e):
        key, _, raw = entry.decode("utf-8", "replace").partition("\n")
        if not _is_safe_key(key):
            continue
        section, _, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        value = _without_userinfo(raw) if name.lower() in ("url", "pushurl") else raw
        quoted = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        header = f'[{section} "{_quoted(subsection)}"]' if subsection else f"[{section}]"
        lines += [header, f'\t{name} = "{quoted}"']
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{parts.port}" if parts.port is not None else ""
    return urlunsplit(parts._replace(netloc=netloc))


_FORBIDDEN_REF = re.compile(r"(^[-.])|(\.\.)|[\x00-\x20~^:?*\[\\]|(@\{)|(\.lock$)|(/$)|(^@$)")


def check_ref_name(name: str) -> str:
    """``name`` if it is a valid branch name that cannot be read as an option."""
    if not name or _FORBIDDEN_REF.search(name):
        raise GitError(
            f"{name!r} is not a usable branch name: use letters, digits, '-', '_', '.' and "
            "'/', not starting with '-' or '.'"
        )
    return name
