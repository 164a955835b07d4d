"""`golem credentials set|ls|rm` keeps a tenant's GitLab token as it keeps its GitHub one:
read from stdin, sealed in the store, listed without its value, and removed by forge."""

from __future__ import annotations

import json

from tests.cli.test_cli import golem, golem_env  # noqa: F401 - the fixture, shared

TOKEN = b"glpat-cliTest0123456789abcdef"


def test_a_gitlab_token_is_set_listed_and_removed_beside_a_github_one(
    golem_env: dict[str, str],  # noqa: F811 - the fixture
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
