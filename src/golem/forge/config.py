"""The forge's configuration models, defined in golem.core with every other section."""

from golem.core.forge_config import GITHUB_API, ForgeConfig, GitHubConfig

__all__ = ["GITHUB_API", "ForgeConfig", "GitHubConfig"]
