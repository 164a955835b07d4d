"""`golem credentials set|ls|rm` keeps a tenant's GitLab token as it keeps its GitHub one:
read from stdin, sealed in the store, listed without its value, and removed by forge."""

from __future__ import annotations

import json
from pathlib import Path

from golem.testing.github_app_server import AppAuthority
from tests.cli.invoke import golem

TOKEN = b"glpat-cliTest0123456789abcdef"


def test_a_gitlab_token_is_set_listed_and_removed_beside_a_github_one(
    golem_env: dict[str, str],
) -> None:
    env = golem_env
    for forge, token in (("gitlab", TOKEN), ("github", b"ghp_cliTest0123456789")):
        done = golem(env, "credentials", "set", "--tenant", "acme", "--forge", forge, stdin=token)
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode().strip() == f"{forge} token of tenant acme set"

    listed = golem(env, "credentials", "ls", "--json")
    removed = golem(env, "credentials", "rm", "--tenant", "acme", "--forge", "gitlab")
    after = golem(env, "credentials", "ls", "--json")
    refused = golem(env, "credentials", "set", "--tenant", "acme", "--forge", "bitbucket")

    assert [(c["tenant"], c["forge"]) for c in json.loads(listed.stdout)] == [
        ("acme", "github"), ("acme", "gitlab"),
    ]  # fmt: skip
    assert TOKEN not in listed.stdout + listed.stderr
    assert removed.returncode == 0, removed.stderr
    assert [c["forge"] for c in json.loads(after.stdout)] == ["github"]
    assert refused.returncode != 0
    assert b"choose github, gitlab" in refused.stderr + refused.stdout


def test_a_github_app_is_kept_from_its_key_file_and_a_file_that_is_no_key_is_refused(
    golem_env: dict[str, str],
    tmp_path: Path,
) -> None:
    app = AppAuthority(42)
    good = app.key_file(tmp_path)
    bad = tmp_path / "not-a-key.pem"
    bad.write_text("ghp_a-token-in-the-wrong-file\n")
    args = ("credentials", "set", "--tenant", "acme", "--forge", "github", "--app-id", "42")

    kept = golem(golem_env, *args, "--private-key", str(good))
    refused = golem(golem_env, *args, "--private-key", str(bad))

    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.decode().strip() == "github App of tenant acme set"
    assert refused.returncode != 0
    assert b".pem file" in refused.stderr + refused.stdout
    assert app.private_key.encode().splitlines()[1] not in kept.stdout + kept.stderr
    stored = golem(golem_env, "credentials", "ls", "--json")
    assert [(c["tenant"], c["forge"]) for c in json.loads(stored.stdout)] == [("acme", "github")]


def test_a_gitlab_oauth_grant_is_kept_from_its_variables(
    golem_env: dict[str, str],
) -> None:
    env = {**golem_env, "CLI_TEST_REFRESH": "oauth-refresh-0123456789", "CLI_TEST_SECRET": "s3"}
    args = ("credentials", "set", "--tenant", "acme", "--forge", "gitlab")
    done = golem(
        env, *args, "--refresh-token-env", "CLI_TEST_REFRESH", "--client-id", "app",
        "--client-secret-env", "CLI_TEST_SECRET", stdin=b"oauth-access-0123456789",
    )  # fmt: skip
    wrong_forge = golem(
        env, "credentials", "set", "--tenant", "acme", "--forge", "github",
        "--refresh-token-env", "CLI_TEST_REFRESH", stdin=b"oauth-access-0123456789",
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "gitlab OAuth grant of tenant acme set"
    assert wrong_forge.returncode != 0
    assert b"--forge gitlab" in wrong_forge.stderr + wrong_forge.stdout
