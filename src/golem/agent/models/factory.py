"""Models chosen by a string: ``anthropic/<model>``, ``openai/<model>``,
``openai-compatible/<model>``, ``scripted:PATH``. Provider modules (and their SDKs, which
take a second or two to import) are imported only when chosen."""

from __future__ import annotations

import os

from golem.agent.contracts import LimitLedger, Model
from golem.agent.models.prices import price_for
from golem.agent.models.scripted import ScriptedModel
from golem.core.errors import ConfigError, ModelAuthError
from golem.core.imports import import_in_background
from golem.core.model_config import ModelsConfig, ProviderConfig

__all__ = ["PROVIDERS", "load_provider_early", "make_model"]

PROVIDERS = ("anthropic", "openai", "openai-compatible")
"""Providers a model string may name before the slash."""

_PROVIDER_MODULES = {
    "anthropic": "golem.agent.models.anthropic_model",
    "openai": "golem.agent.models.openai_model",
    "openai-compatible": "golem.agent.models.openai_model",
}

_FORMS = (
    "anthropic/<model> (e.g. anthropic/claude-opus-4-5), openai/<model> (e.g. "
    "openai/gpt-5), openai-compatible/<model> (Ollama, vLLM, LM Studio, Docker Model "
    "Runner, at [models.openai_compatible] base_url), or scripted:PATH"
)


def make_model(
    name: str, config: ModelsConfig | None = None, *, ledger: LimitLedger | None = None
) -> Model:
    """The model a string names, configured from ``config`` (golem.toml's ``[models]``);
    a provider's calls go through the limiter of its key on ``ledger`` (golem's store, to
    share it with every run and server; None: this model's own).

    Raises ConfigError for a string of no known form, ModelAuthError when the provider's
    API key variable is not set, ConfigError for a script that cannot be used.
    """
    config = config or ModelsConfig()
    if name.startswith("scripted:"):
        path = name.removeprefix("scripted:")
        if not path:
            raise ConfigError(f"Model {name!r} names no file. Use one of: {_FORMS}.")
        return ScriptedModel.from_file(path, price=price_for(name, config))
    provider, _, model = name.partition("/")
    if provider not in PROVIDERS or not model:
        raise ConfigError(f"Unknown model {name!r}. Use one of: {_FORMS}.")
    price = price_for(name, config)
    if provider == "anthropic":
        from golem.agent.models.anthropic_model import AnthropicModel  # noqa: PLC0415

        key = _api_key(name, config.anthropic, "anthropic")
        return AnthropicModel(
            model,
            api_key=key,
            provider=config.anthropic,
            price=price,
            models=config,
            ledger=ledger,
        )
    from golem.agent.models.openai_model import OpenAIModel  # noqa: PLC0415

    compatible = provider == "openai-compatible"
    section = config.openai_compatible if compatible else config.openai
    return OpenAIModel(
        model,
        api_key=_api_key(name, section, "openai_compatible" if compatible else "openai"),
        provider=section,
        price=price,
        compatible=compatible,
        models=config,
        ledger=ledger,
    )


def load_provider_early(name: str) -> None:
    """Start loading the provider module (and SDK) of model ``name`` in the background, for
    a run that will make it later: its box starts meanwhile. Any other name: nothing."""
    module = _PROVIDER_MODULES.get(name.partition("/")[0])
    if module is not None and not name.startswith("scripted:"):
        import_in_background(module)


def _api_key(name: str, provider: ProviderConfig, section: str) -> str | None:
    """The key from the variable the provider's config names; None only where the config
    says the provider needs none."""
    key = os.environ.get(provider.api_key_env) or None
    if key is None and provider.api_key_required:
        raise ModelAuthError(
            f"No API key for {name}: set the environment variable {provider.api_key_env} "
            f"(or name another variable with api_key_env under [models.{section}] in "
            "golem.toml)."
        )
    return key
