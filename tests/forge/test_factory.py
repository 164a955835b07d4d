"""make_forge, ForgeConfig and the package's public names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import golem.forge
from golem.core.errors import ConfigError
from golem.forge import (
    ForgeConfig,
    GitHubConfig,
    GitHubForge,
    LocalForge,
    git_auth,
    make_forge,
)
from golem.store import MemoryStore

TOKEN_ENV = "GOLEM_TEST_GITHUB_TOKEN"  # noqa: S105 (a variable's name)
TOKEN = "ghp_t"  # noqa: S105 (a test token)


def test_make_forge_chooses_by_name_or_config() -> None:
    store = MemoryStore()
    config = ForgeConfig(labels=["golem"])

    local = make_forge(None, config, store)
    github = make_forge("github", config, store)

    assert isinstance(local, LocalForge)
    assert local.store is store
    assert isinstance(github, GitHubForge)
    assert github.labels == ["golem"]
    assert isinstance(make_forge(None, ForgeConfig(provider="github")), GitHubForge)


def test_make_forge_refuses_unknown_names_and_a_local_forge_without_store() -> None:
    with pytest.raises(ConfigError, match="choose one of github, gitlab, local"):
        make_forge("bitbucket", ForgeConfig())
    with pytest.raises(ConfigError, match="MemoryStore"):
        make_forge("local", ForgeConfig())


def test_forge_config_defaults_and_strictness() -> None:
    config = ForgeConfig()

    assert (config.provider, config.author_name, config.escalation_labels) == (
        "local", "golem", ["needs-human"],
    )  # fmt: skip
    assert config.github.token_env == "GITHUB_TOKEN"  # noqa: S105
    assert config.github.api_url == "https://api.github.com"
    with pytest.raises(ValueError, match="Extra inputs"):
        ForgeConfig.model_validate({"github": {"token": "ghp_in_a_file"}})


def test_git_gets_the_github_token_only_when_asked_and_only_for_github(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    github = GitHubConfig(token_env=TOKEN_ENV, token_for_git=True)
    config = ForgeConfig(github=github)

    auth = git_auth(config, "https://github.com/octo/demo.git")
    assert auth is not None
    assert auth.tokens.secrets() == [TOKEN]
    assert git_auth(config, "https://gitlab.com/octo/demo.git") is None
    assert git_auth(config, "/srv/repos/demo.git") is None
    assert git_auth(ForgeConfig(), "https://github.com/octo/demo.git") is None
    enterprise = ForgeConfig(
        github=github.model_copy(update={"api_url": "https://ghe.example.com/api/v3"})
    )
    assert git_auth(enterprise, "https://ghe.example.com/octo/demo.git") is not None


def test_every_public_name_is_exported() -> None:
    for name in golem.forge.__all__:
        assert getattr(golem.forge, name) is not None
    assert sorted(golem.forge.__all__) == sorted(set(golem.forge.__all__))


def test_the_documented_forge_section_is_the_default() -> None:
    text = (Path(__file__).parents[2] / "docs" / "forge.md").read_text()
    block = re.search(r"```toml\n(\[forge\].*?)```", text, re.DOTALL)
    assert block is not None

    documented = ForgeConfig.model_validate(tomllib.loads(block[1])["forge"])

    assert documented == ForgeConfig()
