"""Scripts for the scripted model: a YAML file of assistant turns, or a recorded
trajectory (JSONL) whose model responses are replayed.

YAML (every key but ``turns`` optional)::

    model: demo-model              # what replies name as their model (default: scripted)
    price: {input: 3, output: 15}  # USD per million tokens; also cache_read, cache_write
    turns:
      - text: I will read the test first.
        tool_calls:
          - name: read
            arguments: {path: tests/test_calc.py}
        usage: {input_tokens: 1200, output_tokens: 40}
      - text: Fixed.
        stop_reason: end_turn      # default: tool_use with tool calls, else end_turn

Tool call ids are ``call_<turn>_<n>`` (both from 1) unless a call gives its own ``id``;
``arguments`` given as a string is parsed as JSON, and a string that is not a JSON
object gives a call with ``error`` set, as a provider would.

JSONL: every line whose ``type`` is ``"model_response"`` holds a ModelResponse as JSON
in ``response``; other lines are skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from golem.agent.contracts import Price
from golem.agent.messages import Message, ModelResponse, StopReason, ToolCall, Usage
from golem.agent.models.tool_input import parse_tool_call
from golem.core.errors import ConfigError
from golem.core.model_config import ModelPrice
from golem.core.yaml_text import nodes_and_data

__all__ = ["Script", "load_script"]


class ScriptToolCall(BaseModel):
    """A tool call of a scripted turn."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class ScriptTurn(BaseModel):
    """One assistant turn of a script."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason | None = None


class ScriptFile(BaseModel):
    """A YAML script: its turns, and optionally a model name and a price."""

    model_config = ConfigDict(extra="forbid")

    model: str = "scripted"
    price: ModelPrice | None = None
    turns: list[ScriptTurn] = Field(min_length=1)


@dataclass(frozen=True)
class Script:
    """Replies to replay, in order, and the price the script sets (if any)."""

    responses: list[ModelResponse]
    price: Price | None


def load_script(path: Path) -> Script:
    """Read a YAML script, or a JSONL trajectory when the name ends in ``.jsonl``; a file
    that cannot be used is a ConfigError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"Cannot read the model script {path}: {exc.strerror or exc}. Check the path "
            "after scripted: (relative paths start from the working directory)."
        ) from exc
    if path.suffix == ".jsonl":
        return Script(responses=_trajectory_responses(path, text), price=None)
    return _yaml_script(path, text)


def _yaml_script(path: Path, text: str) -> Script:
    try:
        root, data = nodes_and_data(text)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else 1
        raise ConfigError(f"{path}:{line}: not valid YAML: {exc.problem}.") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}.") from exc
    try:
        script = ScriptFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(path, root, exc)) from exc
    price = script.price
    return Script(
        responses=[_response(n, turn, script.model) for n, turn in enumerate(script.turns, 1)],
        price=None if price is None else Price(**price.model_dump()),
    )


def _response(number: int, turn: ScriptTurn, model: str) -> ModelResponse:
    calls = [_tool_call(number, n, call) for n, call in enumerate(turn.tool_calls, 1)]
    return ModelResponse(
        message=Message(role="assistant", content=turn.text, tool_calls=calls),
        usage=turn.usage,
        cost_usd=0.0,
        stop_reason=turn.stop_reason or ("tool_use" if calls else "end_turn"),
        model=model,
    )


def _tool_call(turn: int, number: int, call: ScriptToolCall) -> ToolCall:
    call_id = call.id or f"call_{turn}_{number}"
    if isinstance(call.arguments, str):
        return parse_tool_call(call_id, call.name, call.arguments)
    return ToolCall(id=call_id, name=call.name, arguments=call.arguments)


def _describe(path: Path, root: yaml.Node | None, exc: ValidationError) -> str:
    """Each problem (at most three) with the line of the YAML node it is about."""
    problems = []
    for error in exc.errors()[:3]:
        loc = error["loc"]
        line = _node_at(root, loc).start_mark.line + 1 if root is not None else 1
        where = ".".join(str(part) for part in loc) or "the file"
        problems.append(f"{path}:{line}: {where}: {error['msg']}")
    more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
    return (
        "Invalid model script: " + "; ".join(problems) + more + ". See docs/models.md for "
        "the format."
    )


def _node_at(node: yaml.Node, loc: tuple[int | str, ...]) -> yaml.Node:
    """The deepest node along ``loc`` that exists (a missing key points at its parent)."""
    for key in loc:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            child = node.value[key] if key < len(node.value) else None
        if child is None:
            break
        node = child
    return node


def _trajectory_responses(path: Path, text: str) -> list[ModelResponse]:
    responses = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: not a JSON line ({exc}).") from exc
        if not isinstance(record, dict) or record.get("type") != "model_response":
            continue
        try:
            responses.append(ModelResponse.model_validate(record.get("response")))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in ("response", *first["loc"]))
            raise ConfigError(
                f"{path}:{number}: {where}: {first['msg']}; this line is not a recorded "
                "model response."
            ) from exc
    if not responses:
        raise ConfigError(
            f"{path}: no line has type model_response, so there is nothing to replay. Give "
            "a trajectory written by golem's agent loop, or a YAML script."
        )
    return responses
