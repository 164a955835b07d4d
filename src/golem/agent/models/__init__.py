"""golem.agent.models: model providers chosen by a string, their prices, and the scripted
model.

``make_model("anthropic/claude-opus-4-5", config.models)`` gives a Model; so do
``openai/<model>``, ``openai-compatible/<model>`` and ``scripted:PATH``. The provider
classes are importable from here too, but their SDKs are loaded only on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from golem.agent.models.factory import PROVIDERS, load_provider_early, make_model
from golem.agent.models.prices import BUILTIN_PRICES, cost_usd, price_for
from golem.agent.models.scripted import ScriptedModel

if TYPE_CHECKING:
    from golem.agent.models.anthropic_model import AnthropicModel
    from golem.agent.models.openai_model import OpenAIModel

__all__ = [
    "BUILTIN_PRICES",
    "PROVIDERS",
    "AnthropicModel",
    "OpenAIModel",
    "ScriptedModel",
    "cost_usd",
    "load_provider_early",
    "make_model",
    "price_for",
]


def __getattr__(name: str) -> object:
    """The provider classes, imported (with their SDK) when first asked for."""
    if name == "AnthropicModel":
        from golem.agent.models.anthropic_model import AnthropicModel  # noqa: PLC0415

        return AnthropicModel
    if name == "OpenAIModel":
        from golem.agent.models.openai_model import OpenAIModel  # noqa: PLC0415

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
