"""Configuration of model providers and prices (``[models]`` in golem.toml)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AnthropicConfig",
    "ModelPrice",
    "ModelsConfig",
    "OpenAICompatibleConfig",
    "OpenAIConfig",
    "ProviderConfig",
]


class ProviderConfig(BaseModel):
    """How to reach one provider. Keys are read from the environment, never from files
    that could be committed: name the variable that holds it."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="API base URL; None: the SDK's default.")
    api_key_env: str = Field(description="Environment variable that holds the API key.")
    api_key_required: bool = Field(
        True,
        description="Refuse to start without the key. Local servers (Ollama, LM Studio, "
        "Docker Model Runner) need none: set false and the key is sent only when the "
        "variable is set.",
    )
    max_retries: int = Field(
        10,
        ge=0,
        description="Retries of one model call that failed for a passing reason (429, 408, "
        "409, 5xx, overloaded, no connection, a stream broken midway), each after the wait "
        "the provider's shared limiter says; past them (or [models] unavailable_after) the "
        "provider counts as down.",
    )
    timeout: float = Field(
        600.0, gt=0, description="Seconds one request to the provider may take (waits apart)."
    )


class AnthropicConfig(ProviderConfig):
    """``[models.anthropic]``: a section that sets only some keys keeps these defaults."""

    api_key_env: str = Field(
        "ANTHROPIC_API_KEY", description="Environment variable that holds the API key."
    )


class OpenAIConfig(ProviderConfig):
    """``[models.openai]``."""

    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable that holds the API key."
    )


class OpenAICompatibleConfig(ProviderConfig):
    """``[models.openai_compatible]``: Ollama on this machine unless told otherwise."""

    base_url: str | None = Field(
        "http://127.0.0.1:11434/v1",
        description="API base URL: Ollama's by default; vLLM http://HOST:8000/v1, "
        "LM Studio http://127.0.0.1:1234/v1.",
    )
    api_key_env: str = Field(
        "OPENAI_COMPATIBLE_API_KEY",
        description="Environment variable that holds the API key, if the server needs one.",
    )
    api_key_required: bool = Field(
        False, description="Local servers need no key; set true for one that does."
    )


class ModelPrice(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float = Field(0.0, ge=0)
    cache_write: float = Field(0.0, ge=0)


class ModelsConfig(BaseModel):
    """Model providers, the default model, and prices that extend the built-in table."""

    model_config = ConfigDict(extra="forbid")

    default: str = Field(
        "anthropic/claude-opus-4-5",
        description="Model of agent steps that name none: provider/model, or scripted:PATH.",
    )
    anthropic: AnthropicConfig = Field(default_factory=AnthropicConfig)
    openai: OpenAIConfig = Field(default_factory=OpenAIConfig)
    openai_compatible: OpenAICompatibleConfig = Field(
        default_factory=OpenAICompatibleConfig,
        description="Ollama, vLLM, LM Studio, Docker Model Runner: any server with the "
        "OpenAI Chat Completions API (openai-compatible/<model>).",
    )
    unavailable_after: float = Field(
        300.0,
        gt=0,
        description="Seconds a model call keeps retrying a provider that fails for a passing "
        "reason before the provider counts as down: a run is then paused (status waiting, "
        "the reason shown) and resumes by itself when the provider is expected back.",
    )
    resume_after: float = Field(
        60.0,
        gt=0,
        description="Seconds a paused run waits before it tries its provider again when the "
        "provider said no time (retry-after); doubled with each pause in a row, up to "
        "resume_max.",
    )
    resume_max: float = Field(
        3600.0,
        gt=0,
        description="The longest a paused run waits before it tries again, whatever the "
        "provider says.",
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description='Prices by model string, e.g. "openai/gpt-5"; they override and extend '
        "golem's built-in table.",
    )
