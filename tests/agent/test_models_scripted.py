"""The scripted model: YAML scripts and recorded trajectories, replayed turn by turn."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from golem.agent import Message, ModelRequest, ModelResponse, Usage
from golem.agent.models import ScriptedModel, make_model
from golem.core.errors import ConfigError, ModelRequestRejected
from golem.core.model_config import ModelPrice, ModelsConfig

ASK = ModelRequest(messages=[Message(role="user", content="Fix the failing test.")])

SCRIPT = """\
# A scripted fix: read, edit, test, finish.
model: demo-model
price: {input: 3, output: 15}
turns:
  - text: I will read the test first.
    tool_calls:
      - name: read
        arguments: {path: tests/test_calc.py}
    usage: {input_tokens: 1000, output_tokens: 100}
  - tool_calls:
      - name: edit
        arguments: {path: calc.py, old: "a - b", new: "a + b"}
      - name: bash
        arguments: {command: pytest -q}
        id: my-own-id
  - text: The test passes now.
    stop_reason: end_turn
"""


def write(tmp_path: Path, text: str, name: str = "script.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


async def test_turns_are_replayed_in_order_with_deterministic_tool_call_ids(
    tmp_path: Path,
) -> None:
    model = make_model(f"scripted:{write(tmp_path, SCRIPT)}", ModelsConfig())

    first = await model.complete(ASK)
    second = await model.complete(ASK)
    third = await model.complete(ASK)

    assert first.message.content == "I will read the test first."
    assert [(c.id, c.name, c.arguments) for c in first.message.tool_calls] == [
        ("call_1_1", "read", {"path": "tests/test_calc.py"})
    ]
    assert first.stop_reason == "tool_use"
    assert [c.id for c in second.message.tool_calls] == ["call_2_1", "my-own-id"]
    assert second.message.tool_calls[0].arguments == {
        "path": "calc.py",
        "old": "a - b",
        "new": "a + b",
    }
    assert (third.message.content, third.stop_reason) == ("The test passes now.", "end_turn")
    assert third.model == "demo-model"


async def test_usage_and_the_scripts_price_give_a_deterministic_cost(tmp_path: Path) -> None:
    model = make_model(f"scripted:{write(tmp_path, SCRIPT)}", ModelsConfig())

    first = await model.complete(ASK)
    second = await model.complete(ASK)

    assert model.price is not None
    assert (model.price.input, model.price.output) == (3, 15)
    assert first.usage == Usage(input_tokens=1000, output_tokens=100)
    assert first.cost_usd == pytest.approx((1000 * 3 + 100 * 15) / 1e6)
    assert (second.usage, second.cost_usd) == (Usage(), 0)


async def test_a_configured_price_overrides_the_scripts_own(tmp_path: Path) -> None:
    name = f"scripted:{write(tmp_path, SCRIPT)}"
    config = ModelsConfig(prices={name: ModelPrice(input=1, output=2)})

    response = await make_model(name, config).complete(ASK)

    assert response.cost_usd == pytest.approx((1000 * 1 + 100 * 2) / 1e6)


async def test_text_goes_to_on_delta(tmp_path: Path) -> None:
    deltas: list[str] = []

    await make_model(f"scripted:{write(tmp_path, SCRIPT)}").complete(ASK, deltas.append)

    assert deltas == ["I will read the test first."]


async def test_running_out_of_turns_is_refused_saying_how_many_there_were(
    tmp_path: Path,
) -> None:
    model = make_model(f"scripted:{write(tmp_path, SCRIPT)}")
    for _ in range(3):
        await model.complete(ASK)

    with pytest.raises(ModelRequestRejected, match="ended after 3 turns"):
        await model.complete(ASK)


async def test_string_arguments_that_are_not_a_json_object_are_a_tool_call_error(
    tmp_path: Path,
) -> None:
    script = """\
turns:
  - tool_calls:
      - {name: bash, arguments: '{"command": "ls"'}
      - {name: read, arguments: '{"path": "a.py"}'}
"""
    response = await make_model(f"scripted:{write(tmp_path, script)}").complete(ASK)

    broken, parsed = response.message.tool_calls
    assert broken.error is not None
    assert "not valid JSON" in broken.error
    assert (parsed.error, parsed.arguments) == (None, {"path": "a.py"})


def test_yaml_that_does_not_parse_is_a_config_error_with_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "turns:\n  - text: fine\n  - text: [unclosed\n")

    with pytest.raises(ConfigError, match=f"{re.escape(str(path))}:4: not valid YAML"):
        make_model(f"scripted:{path}")


def test_a_bad_turn_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    script = "turns:\n  - text: fine\n  - text: bad\n    stop_reason: bored\n"
    path = write(tmp_path, script)

    with pytest.raises(ConfigError, match=f"{re.escape(str(path))}:4: turns.1.stop_reason"):
        make_model(f"scripted:{path}")


def test_an_unknown_key_in_a_tool_call_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    script = "turns:\n  - tool_calls:\n      - name: read\n        args: {path: a}\n"
    path = write(tmp_path, script)

    with pytest.raises(ConfigError, match=f"{re.escape(str(path))}:4: turns.0.tool_calls.0.args"):
        make_model(f"scripted:{path}")


@pytest.mark.parametrize("text", ["turns: []\n", "- just a list\n", "", "model: x\n"])
def test_a_script_without_turns_is_a_config_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="Invalid model script"):
        make_model(f"scripted:{write(tmp_path, text)}")


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Cannot read the model script .*nothing\.yaml"):
        make_model(f"scripted:{tmp_path / 'nothing.yaml'}")


def recorded(text: str, **usage: int) -> dict[str, object]:
    response = ModelResponse(
        message=Message(role="assistant", content=text),
        usage=Usage(**usage),
        cost_usd=0.25,
        stop_reason="end_turn",
        model="claude-haiku-4-5-20251001",
    )
    return {"type": "model_response", "response": response.model_dump(mode="json")}


async def test_a_jsonl_trajectory_replays_its_model_responses_in_order(tmp_path: Path) -> None:
    lines = [
        {"type": "model_request", "request": ASK.model_dump(mode="json")},
        recorded("first", input_tokens=10),
        {"type": "tool_result", "output": "..."},
        recorded("second", output_tokens=3),
    ]
    path = write(tmp_path, "\n".join(json.dumps(line) for line in lines) + "\n", "run.jsonl")
    model = make_model(f"scripted:{path}")

    first = await model.complete(ASK)
    second = await model.complete(ASK)

    assert (first.message.content, first.usage.input_tokens) == ("first", 10)
    assert (second.message.content, second.usage.output_tokens) == ("second", 3)
    assert first.cost_usd == 0.25
    assert first.model == "claude-haiku-4-5-20251001"
    with pytest.raises(ModelRequestRejected, match="ended after 2 turns"):
        await model.complete(ASK)


def test_a_jsonl_line_that_is_not_json_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(recorded("ok")) + "\n{oops\n", "run.jsonl")

    with pytest.raises(ConfigError, match=f"{re.escape(str(path))}:2: not a JSON line"):
        make_model(f"scripted:{path}")


def test_a_malformed_recorded_response_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    bad = {"type": "model_response", "response": {"message": {"role": "assistant"}}}
    path = write(tmp_path, json.dumps(recorded("ok")) + "\n" + json.dumps(bad) + "\n", "r.jsonl")

    with pytest.raises(ConfigError, match=f"{re.escape(str(path))}:2: response.usage"):
        make_model(f"scripted:{path}")


def test_a_trajectory_without_model_responses_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"type": "tool_result"}) + "\n", "run.jsonl")

    with pytest.raises(ConfigError, match="no line has type model_response"):
        make_model(f"scripted:{path}")


async def test_a_scripted_model_can_be_built_from_responses_directly() -> None:
    reply = ModelResponse(
        message=Message(role="assistant", content="hi"),
        usage=Usage(),
        cost_usd=0,
        stop_reason="end_turn",
        model="m",
    )
    model = ScriptedModel([reply])

    assert model.turns_left == 1
    assert (await model.complete(ASK)).message.content == "hi"
    assert model.turns_left == 0


DOCS = Path(__file__).parents[2] / "docs" / "models.md"


def docs_block(language: str, after: str) -> str:
    """The first ```language block after the heading ``after`` in docs/models.md."""
    text = DOCS.read_text().split(after, 1)[1]
    return text.split(f"```{language}\n", 1)[1].split("```", 1)[0]


async def test_the_documented_yaml_example_replays(tmp_path: Path) -> None:
    path = write(tmp_path, docs_block("yaml", "### YAML scripts"))
    model = make_model(f"scripted:{path}")

    turns = [await model.complete(ASK) for _ in range(4)]

    assert [c.name for t in turns for c in t.message.tool_calls] == [
        "read",
        "edit",
        "bash",
        "bash",
        "finish",
    ]
    assert turns[1].message.tool_calls[1].id == "run-tests"
    assert turns[2].message.tool_calls[0].error is not None
    assert turns[0].cost_usd == pytest.approx((1200 * 3 + 40 * 15) / 1e6)


async def test_the_documented_trajectory_line_replays(tmp_path: Path) -> None:
    path = write(tmp_path, docs_block("json", "### Replaying a trajectory"), "run.jsonl")

    response = await make_model(f"scripted:{path}").complete(ASK)

    assert response.message.tool_calls[0].arguments == {"path": "a.py"}
    assert response.cost_usd == 0.0032
