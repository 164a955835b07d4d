"""The forge's configuration models, defined in golem.core with every other section."""

from golem.core.forge_config import GITHUB_API, GITLAB_URL, ForgeConfig, GitHubConfig, GitLabConfig

__all__ = ["GITHUB_API", "GITLAB_URL", "ForgeConfig", "GitHubConfig", "GitLabConfig"]
