"""The base of golem's coding tools: arguments checked by a pydantic model, and every
problem the model can fix answered as an ``is_error`` observation, never an exception."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from golem.agent.contracts import ToolResult
from golem.agent.messages import ToolSpec
from golem.core import InvalidRequest, RuntimeNotAvailable
from golem.core.errors import ToolProblem
from golem.sandbox import Box

__all__ = ["BoxTool", "parameters_of"]

ArgumentsT = TypeVar("ArgumentsT", bound=BaseModel)


class BoxTool(ABC, Generic[ArgumentsT]):
    """A tool whose arguments are a pydantic model and whose work happens in the box."""

    def __init__(self, name: str, description: str, arguments: type[ArgumentsT]) -> None:
        self.spec = ToolSpec(
            name=name, description=description, parameters=parameters_of(arguments)
        )
        self._arguments = arguments

    async def run(self, box: Box, arguments: dict[str, Any]) -> ToolResult:
        """Check ``arguments``, act, and answer problems the model can fix as errors."""
        try:
            parsed = self._arguments.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(invalid_arguments(self.spec, exc), is_error=True)
        try:
            result = await self.act(box, parsed)
        except (ToolProblem, InvalidRequest, RuntimeNotAvailable) as exc:
            result = ToolResult(exc.message, is_error=True)
        # Names from the box may hold undecodable bytes; providers need valid UTF-8.
        return replace(result, output=result.output.encode("utf-8", "replace").decode())

    @abstractmethod
    async def act(self, box: Box, arguments: ArgumentsT) -> ToolResult:
        """Do the work; raise ``ToolProblem`` for anything the model should correct."""


def invalid_arguments(spec: ToolSpec, error: ValidationError) -> str:
    """Name each bad field and what was wrong with it, then the tool's signature."""
    problems = []
    for item in error.errors(include_url=False):
        field = ".".join(str(part) for part in item["loc"]) or "(the arguments)"
        problems.append(f"- {field}: {item['msg']}")
    properties = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    signature = ", ".join(name if name in required else f"{name}?" for name in properties)
    return (
        f"invalid arguments for {spec.name}:\n"
        + "\n".join(problems)
        + f"\nexpected: {spec.name}({signature})"
    )


def parameters_of(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema, without titles and with optional fields as plain types."""
    simplified = _simplify(model.model_json_schema())
    assert isinstance(simplified, dict)
    return simplified


def _simplify(node: Any) -> Any:
    if isinstance(node, list):
        return [_simplify(item) for item in node]
    if not isinstance(node, dict):
        return node
    choices = node.get("anyOf")
    if isinstance(choices, list) and len(choices) == 2 and {"type": "null"} in choices:
        (kept,) = [choice for choice in choices if choice != {"type": "null"}]
        node = {key: value for key, value in node.items() if key != "anyOf"} | kept
    return {
        key: _simplify(value)
        for key, value in node.items()
        if not (key == "title" and isinstance(value, str))
        and not (key == "default" and value is None)
    }
