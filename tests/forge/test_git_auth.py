"""Tokens for git over HTTP(S): sent through the environment to their origin only, never
in argv, a URL or an error message. Against ``git http-backend`` on loopback."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core.errors import GitPushRejected, GitRemoteError
from golem.forge import GitAuth, GitRepo
from golem.testing.git_http_server import GitHttpServer
from tests.forge.conftest import AUTHOR, git, seed_bare

TOKEN = "ghs_golemTestToken0123456789"  # noqa: S105 (a test token)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GitHttpServer]:
    """origin.git behind a git server that wants TOKEN; it accepts pushes."""
    bare = seed_bare(tmp_path / "served")
    git("config", "http.receivepack", "true", cwd=bare)
    with GitHttpServer(tmp_path / "served", TOKEN) as server:
        yield server


@pytest.fixture
def recording_git(tmp_path: Path) -> tuple[str, Path]:
    """A git that logs its argv and environment (NUL-separated) and then runs git."""
    log = tmp_path / "git-calls"
    log.mkdir()
    script = tmp_path / "git-recorder"
    real = shutil.which("git")
    script.write_text(
        "#!/bin/sh\n"
        f'n="{log}/$$"\n'
        'printf "%s\\0" "$@" > "$n.argv"\n'
        'env -0 > "$n.env"\n'
        f'exec "{real}" "$@"\n'
    )
    script.chmod(0o755)
    return str(script), log


async def test_clone_and_push_with_a_token_over_http(served: GitHttpServer, tmp_path: Path) -> None:
    url = served.url_for("origin.git")
    repo = await GitRepo.clone(url, tmp_path / "work", auth=GitAuth(TOKEN, url))
    await repo.checkout_branch("golem/t")
    (repo.path / "a.txt").write_text("a\n")
    sha = await repo.commit_all("a", *AUTHOR)

    await repo.push("golem/t")

    assert git("rev-parse", "golem/t", cwd=served.root / "origin.git") == sha
    assert all(r.authorization == served.expected_authorization() for r in served.requests)
    assert await repo.remote_url() == url
    assert TOKEN not in (repo.path / ".git" / "config").read_text()


async def test_without_a_token_git_fails_without_prompting(
    served: GitHttpServer, tmp_path: Path
) -> None:
    with pytest.raises(GitRemoteError, match="could not authenticate"):
        await GitRepo.clone(served.url_for("origin.git"), tmp_path / "work")


async def test_a_refused_token_is_masked_in_the_error(
    served: GitHttpServer, tmp_path: Path
) -> None:
    url = served.url_for("origin.git")
    wrong = GitAuth("ghs_wrongToken9876543210", url)

    with pytest.raises(GitRemoteError) as caught:
        await GitRepo.clone(url, tmp_path / "work", auth=wrong)

    for secret in wrong.secrets():
        assert secret not in str(caught.value)
        assert secret not in caught.value.output
        assert secret not in caught.value.command


async def test_git_output_that_echoes_the_token_is_masked(
    served: GitHttpServer, tmp_path: Path
) -> None:
    hook = served.root / "origin.git" / "hooks" / "pre-receive"
    auth = GitAuth(TOKEN, served.url_for("origin.git"))
    hook.write_text(f"#!/bin/sh\necho 'refused, token {TOKEN} {auth.secrets()[1]}' >&2\nexit 1\n")
    hook.chmod(0o755)
    repo = await GitRepo.clone(auth.url, tmp_path / "work", auth=auth)
    (repo.path / "a.txt").write_text("a\n")
    await repo.commit_all("a", *AUTHOR)

    with pytest.raises(GitPushRejected) as caught:
        await repo.push("main")

    assert "refused, token *** ***" in caught.value.message
    assert TOKEN not in caught.value.output


async def test_the_token_goes_through_the_environment_of_remote_commands_only(
    served: GitHttpServer, tmp_path: Path, recording_git: tuple[str, Path]
) -> None:
    program, log = recording_git
    url = served.url_for("origin.git")
    auth = GitAuth(TOKEN, url)
    repo = await GitRepo.clone(url, tmp_path / "work", auth=auth, git=program)
    (repo.path / "a.txt").write_text("a\n")
    await repo.commit_all("a", *AUTHOR)
    await repo.push("main")

    calls = sorted(log.glob("*.argv"))
    assert len(calls) >= 4
    remote_commands = 0
    for call in calls:
        argv = call.read_bytes().decode()
        env = dict(
            entry.split("=", 1)
            for entry in call.with_suffix(".env").read_bytes().decode().split("\0")
            if "=" in entry
        )
        assert not any(secret in argv for secret in auth.secrets())
        assert env["GIT_TERMINAL_PROMPT"] == "0"
        config = {
            env[f"GIT_CONFIG_KEY_{n}"]: env[f"GIT_CONFIG_VALUE_{n}"]
            for n in range(int(env["GIT_CONFIG_COUNT"]))
        }
        remote = argv.split("\0")[0] in ("clone", "push")
        remote_commands += remote
        assert config.get(f"http.{served.url}/.extraHeader") == (auth.header if remote else None)
        assert config["core.hooksPath"] == os.devnull
    assert remote_commands == 2


async def test_the_token_is_not_sent_to_a_remote_pointed_elsewhere(
    served: GitHttpServer, tmp_path: Path
) -> None:
    url = served.url_for("origin.git")
    repo = await GitRepo.clone(url, tmp_path / "work", auth=GitAuth(TOKEN, url))
    seed_bare(tmp_path / "elsewhere")
    with GitHttpServer(tmp_path / "elsewhere", "another-token") as elsewhere:
        git("remote", "set-url", "origin", elsewhere.url_for("origin.git"), cwd=repo.path)

        with pytest.raises(GitRemoteError):
            await repo.fetch()

        assert elsewhere.requests
        assert all(r.authorization is None for r in elsewhere.requests)


async def test_the_hosts_own_credential_helper_is_used_by_default(
    served: GitHttpServer, tmp_path: Path
) -> None:
    helper = tmp_path / "helper"
    helper.write_text(f"#!/bin/sh\necho username=x-access-token\necho password={TOKEN}\n")
    helper.chmod(0o755)
    git("config", "--global", "credential.helper", str(helper))

    repo = await GitRepo.clone(served.url_for("origin.git"), tmp_path / "work")

    assert await repo.head() is not None
