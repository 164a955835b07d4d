"""make_model chooses providers by string; prices come from the built-in table and golem.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from golem.agent import Price, Usage, models
from golem.agent.models import (
    BUILTIN_PRICES,
    AnthropicModel,
    OpenAIModel,
    ScriptedModel,
    cost_usd,
    make_model,
    price_for,
)
from golem.core import load_config
from golem.core.errors import ConfigError, ModelAuthError
from golem.core.model_config import AnthropicConfig, ModelPrice, ModelsConfig


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")


@pytest.mark.usefixtures("keys")
@pytest.mark.parametrize(
    ("name", "cls", "model_id"),
    [
        ("anthropic/claude-haiku-4-5", AnthropicModel, "claude-haiku-4-5"),
        ("openai/gpt-5", OpenAIModel, "gpt-5"),
        ("openai-compatible/qwen3:8b", OpenAIModel, "qwen3:8b"),
        ("openai-compatible/meta-llama/Llama-3.1-8B", OpenAIModel, "meta-llama/Llama-3.1-8B"),
    ],
)
def test_each_provider_string_makes_its_model(name: str, cls: type, model_id: str) -> None:
    model = make_model(name, ModelsConfig())

    assert isinstance(model, cls)
    assert model.name == name
    assert model.model == model_id


def test_scripted_makes_a_scripted_model(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - text: hi\n")

    model = make_model(f"scripted:{script}", ModelsConfig())

    assert isinstance(model, ScriptedModel)
    assert model.name == f"scripted:{script}"


def test_openai_compatible_is_marked_compatible_and_openai_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")

    compatible = make_model("openai-compatible/llama3", ModelsConfig())
    official = make_model("openai/gpt-5", ModelsConfig())

    assert isinstance(compatible, OpenAIModel)
    assert isinstance(official, OpenAIModel)
    assert (compatible.compatible, official.compatible) == (True, False)


@pytest.mark.parametrize(
    "name", ["gpt-5", "azure/gpt-5", "openai/", "/gpt-5", "claude-sonnet-4-5", "scripted:"]
)
def test_a_string_of_no_known_form_is_a_config_error_naming_the_forms(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_model(name, ModelsConfig())

    for form in ("anthropic/<model>", "openai/<model>", "openai-compatible/<model>", "scripted:"):
        assert form in caught.value.message


@pytest.mark.parametrize(
    ("name", "variable"),
    [("anthropic/claude-haiku-4-5", "ANTHROPIC_API_KEY"), ("openai/gpt-5", "OPENAI_API_KEY")],
)
@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_key_variable_is_model_auth_error_saying_what_to_set(
    monkeypatch: pytest.MonkeyPatch, name: str, variable: str, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv(variable, raising=False)
    else:
        monkeypatch.setenv(variable, value)

    with pytest.raises(ModelAuthError, match=f"set the environment variable {variable}"):
        make_model(name, ModelsConfig())


def test_the_key_variable_is_the_one_the_config_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("MY_CLAUDE_KEY", raising=False)
    config = ModelsConfig(anthropic=AnthropicConfig(api_key_env="MY_CLAUDE_KEY"))

    with pytest.raises(ModelAuthError, match="MY_CLAUDE_KEY"):
        make_model("anthropic/claude-haiku-4-5", config)
    monkeypatch.setenv("MY_CLAUDE_KEY", "sk-ant-test")
    assert make_model("anthropic/claude-haiku-4-5", config).name == "anthropic/claude-haiku-4-5"


def test_openai_compatible_needs_a_key_only_when_configured_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)

    assert make_model("openai-compatible/llama3", ModelsConfig()).name.endswith("llama3")
    strict = ModelsConfig()
    strict.openai_compatible.api_key_required = True
    with pytest.raises(ModelAuthError, match="OPENAI_COMPATIBLE_API_KEY"):
        make_model("openai-compatible/llama3", strict)


def test_provider_sdks_are_imported_only_when_a_provider_is_chosen() -> None:
    code = (
        "import sys, golem.agent.models as m\n"
        "assert 'anthropic' not in sys.modules and 'openai' not in sys.modules\n"
        "m.AnthropicModel\n"
        "assert 'anthropic' in sys.modules and 'openai' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_name_in_dunder_all_exists() -> None:
    for name in models.__all__:
        assert getattr(models, name) is not None
    with pytest.raises(AttributeError):
        _ = models.NoSuchThing  # type: ignore[attr-defined]


@pytest.mark.usefixtures("keys")
def test_models_carry_their_price_from_the_table() -> None:
    model = make_model("anthropic/claude-haiku-4-5", ModelsConfig())

    assert model.price == Price(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25)


@pytest.mark.parametrize(
    ("name", "input_price", "output_price"),
    [
        ("anthropic/claude-sonnet-4-5", 3, 15),
        ("anthropic/claude-opus-4-1", 15, 75),
        ("anthropic/claude-haiku-4-5", 1, 5),
        ("openai/gpt-5", 1.25, 10),
        ("openai/gpt-5-mini", 0.25, 2),
        ("openai/gpt-4.1", 2, 8),
        ("openai/gpt-4o", 2.5, 10),
    ],
)
def test_the_built_in_table_prices_current_models(
    name: str, input_price: float, output_price: float
) -> None:
    price = price_for(name)

    assert price is not None
    assert (price.input, price.output) == (input_price, output_price)


def test_a_dated_snapshot_costs_what_its_model_costs() -> None:
    assert price_for("anthropic/claude-sonnet-4-5-20250929") == price_for(
        "anthropic/claude-sonnet-4-5"
    )
    assert price_for("openai/gpt-4o-2024-08-06") == price_for("openai/gpt-4o")


def test_an_unknown_model_has_no_price_and_costs_nothing() -> None:
    assert price_for("openai-compatible/llama3") is None
    assert price_for("anthropic/claude-nonesuch") is None
    assert cost_usd(Usage(input_tokens=10**6, output_tokens=10**6), None) == 0


def test_configured_prices_override_and_extend_the_table() -> None:
    config = ModelsConfig(
        prices={
            "openai/gpt-5": ModelPrice(input=1.0, output=8.0),
            "openai-compatible/llama3": ModelPrice(input=0.1, output=0.2),
            "anthropic/claude-sonnet-4-5": ModelPrice(input=2, output=10, cache_read=0.2),
        }
    )

    assert price_for("openai/gpt-5", config) == Price(input=1.0, output=8.0)
    assert price_for("openai-compatible/llama3", config) == Price(input=0.1, output=0.2)
    assert price_for("anthropic/claude-sonnet-4-5-20250929", config) == Price(
        input=2, output=10, cache_read=0.2
    )
    assert price_for("openai/gpt-4o", config) == BUILTIN_PRICES["openai/gpt-4o"]


def test_cost_bills_each_kind_of_token_at_its_rate() -> None:
    usage = Usage(
        input_tokens=2_000_000,
        output_tokens=1_000_000,
        cache_read_tokens=10_000_000,
        cache_write_tokens=1_000_000,
    )
    price = Price(input=3, output=15, cache_read=0.3, cache_write=3.75)

    assert cost_usd(usage, price) == pytest.approx(2 * 3 + 15 + 10 * 0.3 + 3.75)


def test_a_golem_toml_section_that_sets_some_keys_keeps_the_other_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = tmp_path / "golem.toml"
    toml.write_text(
        "[models.openai_compatible]\n"
        'base_url = "http://127.0.0.1:1234/v1"\n'
        "[models.anthropic]\n"
        "max_retries = 1\n"
        "[models.prices]\n"
        '"openai-compatible/qwen3:8b" = { input = 0.05, output = 0.1 }\n'
    )
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)

    config = load_config(files=[toml]).models
    model = make_model("openai-compatible/qwen3:8b", config)

    assert config.openai_compatible.api_key_env == "OPENAI_COMPATIBLE_API_KEY"
    assert config.openai_compatible.api_key_required is False
    assert (config.anthropic.api_key_env, config.anthropic.max_retries) == ("ANTHROPIC_API_KEY", 1)
    assert model.price == Price(input=0.05, output=0.1)
