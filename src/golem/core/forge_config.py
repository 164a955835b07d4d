"""Configuration of the forges and of git on the host (``[forge]`` in golem.toml)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Self
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

__all__ = ["GITHUB_API", "GITLAB_URL", "ForgeConfig", "GitHubConfig", "GitLabConfig"]

GITHUB_API = "https://api.github.com"
GITLAB_URL = "https://gitlab.com"


class GitHubConfig(BaseModel):
    """``[forge.github]``: how to reach GitHub (or a GitHub Enterprise server)."""

    model_config = ConfigDict(extra="forbid")

    token_env: str = Field(
        "GITHUB_TOKEN",
        description="Environment variable that holds the token (never the token itself).",
    )
    api_url: str = Field(
        GITHUB_API,
        description="REST API base URL; GitHub Enterprise Server: https://HOST/api/v3.",
    )
    token_for_git: bool = Field(
        False,
        description="Also give git the token for HTTPS pushes and clones; otherwise git uses "
        "the host's own credentials (helpers, ssh keys).",
    )
    max_retries: int = Field(
        3, ge=0, description="Retries on 502/503/504, network errors and secondary limits."
    )
    max_wait: float = Field(
        60.0, ge=0, description="Longest Retry-After (seconds) golem waits before giving up."
    )
    timeout: float = Field(30.0, gt=0, description="Seconds one API request may take.")
    app_id: int | None = Field(
        None,
        gt=0,
        description="A GitHub App's id: golem mints the App's installation tokens (one hour "
        "each, refreshed before they expire) instead of reading token_env.",
    )
    private_key: SecretStr | None = Field(
        None,
        description="The App's private key: the path of its PEM file (keep it mode 0600), or "
        "the PEM itself (GOLEM_FORGE__GITHUB__PRIVATE_KEY).",
    )
    installation_id: int | None = Field(
        None,
        gt=0,
        description="The App's installation to mint tokens for; unset: the one installed on "
        "each run's repository (GET /repos/{owner}/{repo}/installation).",
    )

    @model_validator(mode="after")
    def _whole_app(self) -> Self:
        if (self.app_id is None) != (self.private_key is None):
            raise ValueError(
                "a GitHub App needs both app_id and private_key (the path of its PEM file): "
                "set both, or neither to use token_env"
            )
        return self

    def git_host(self) -> str | None:
        """The host git remotes of this GitHub live on."""
        host = urlsplit(self.api_url).hostname
        return "github.com" if host == "api.github.com" else host

    def app_key(self) -> str | None:
        """The App's private key as PEM text (read from its file when ``private_key`` is a
        path), or None without an App."""
        if self.private_key is None:
            return None
        value = self.private_key.get_secret_value()
        if value.lstrip().startswith("-----BEGIN"):
            return value
        return Path(value).expanduser().read_text(encoding="utf-8", errors="replace")

    def token(self) -> str | None:
        """The token from ``token_env``, or None when it is unset or empty."""
        return os.environ.get(self.token_env) or None


class GitLabConfig(BaseModel):
    """``[forge.gitlab]``: how to reach GitLab (gitlab.com, or a self-managed instance)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(
        GITLAB_URL,
        description="The instance's web address; its REST API is BASE_URL/api/v4.",
    )
    token_env: str = Field(
        "GITLAB_TOKEN",
        description="Environment variable that holds the token (personal, project or group "
        "access token; never the token itself).",
    )
    token_for_git: bool = Field(
        False,
        description="Also give git the token (as oauth2:TOKEN) for HTTPS pushes and clones; "
        "otherwise git uses the host's own credentials (helpers, ssh keys).",
    )
    max_retries: int = Field(
        3, ge=0, description="Retries on 502/503/504, network errors and rate limits."
    )
    max_wait: float = Field(
        60.0, ge=0, description="Longest Retry-After (seconds) golem waits before giving up."
    )
    timeout: float = Field(30.0, gt=0, description="Seconds one API request may take.")
    refresh_token_env: str | None = Field(
        None,
        description="Environment variable that holds an OAuth refresh token: token_env's "
        "token is then an OAuth access token (two hours), refreshed through /oauth/token "
        "before it expires and after a 401; each new refresh token is kept in the state "
        "directory (gitlab-oauth.json), which wins over the variable once written.",
    )
    oauth_client_id: str | None = Field(
        None, description="The OAuth application's id (Application ID) the tokens belong to."
    )
    oauth_client_secret_env: str | None = Field(
        None,
        description="Environment variable that holds the OAuth application's secret, where "
        "the application is confidential.",
    )

    @field_validator("base_url")
    @classmethod
    def _web_address(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"{value!r} is not a GitLab's web address: write https://gitlab.com or "
                "https://HOST (the API's /api/v4 is added)"
            )
        if parts.path.rstrip("/").endswith("/api/v4"):
            raise ValueError(f"{value!r} is the API: give the web address, without /api/v4")
        return value

    @property
    def api_url(self) -> str:
        """The REST API v4 of the instance."""
        return f"{self.base_url.rstrip('/')}/api/v4"

    def git_host(self) -> str | None:
        """The host git remotes of this GitLab live on."""
        return urlsplit(self.base_url).hostname

    def token(self) -> str | None:
        """The token from ``token_env``, or None when it is unset or empty."""
        return os.environ.get(self.token_env) or None

    def refresh_token(self) -> str | None:
        """The OAuth refresh token from ``refresh_token_env`` (None: unset or empty)."""
        name = self.refresh_token_env
        return (os.environ.get(name) or None) if name else None

    def client_secret(self) -> str | None:
        """The OAuth application's secret from ``oauth_client_secret_env`` (None: unset)."""
        name = self.oauth_client_secret_env
        return (os.environ.get(name) or None) if name else None


class ForgeConfig(BaseModel):
    """``[forge]``: where pull requests go, and how golem commits."""

    model_config = ConfigDict(extra="forbid")

    provider: Literal["github", "gitlab", "local"] = Field(
        "local", description="The forge used when a run names none."
    )
    author_name: str = Field("golem", description="Author and committer of golem's commits.")
    author_email: str = Field("golem@localhost", description="Their email address.")
    labels: list[str] = Field(
        default_factory=list, description="Labels every pull request golem opens gets."
    )
    escalation_labels: list[str] = Field(
        default_factory=lambda: ["needs-human"],
        description="Labels of a pull request handed to a human (checks still fail).",
    )
    unverified_labels: list[str] = Field(
        default_factory=lambda: ["unverified"],
        description="Labels of a draft pull request no check verified.",
    )
    git_timeout: float = Field(600.0, gt=0, description="Seconds one git command may take.")
    github: GitHubConfig = Field(default_factory=GitHubConfig)
    gitlab: GitLabConfig = Field(default_factory=GitLabConfig)
