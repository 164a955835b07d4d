"""Blueprints from YAML, with errors that name the file and the line.

``load_blueprint("minion")`` gives a built-in blueprint; anything else is a path.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from golem.blueprint.model import AgentNode, Blueprint, CINode, LoopNode
from golem.blueprint.template import VARIABLES, unknown_variables
from golem.core.errors import ConfigError
from golem.core.yaml_text import nodes_and_data

__all__ = ["BUILTINS", "blueprint_text", "load_blueprint", "parse_blueprint"]

BUILTINS = ("minion", "follow-up", "prepare")
Path_ = tuple[str | int, ...]


def blueprint_text(source: str | Path) -> tuple[str, str]:
    """The YAML of a built-in blueprint (by name) or of a file, and where it came from."""
    if isinstance(source, str) and source in BUILTINS:
        path = files("golem.blueprint") / "builtin" / f"{source}.yaml"
        return path.read_text(encoding="utf-8"), f"builtin:{source}"
    file = Path(source)
    if not file.is_file():
        known = ", ".join(BUILTINS)
        raise ConfigError(f"no blueprint {str(source)!r}: give a YAML file or one of: {known}")
    try:
        return file.read_text(encoding="utf-8"), str(file)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read blueprint {file}: {exc}") from None


def load_blueprint(source: str | Path) -> Blueprint:
    """A built-in blueprint by name, or one from a YAML file."""
    return parse_blueprint(*blueprint_text(source))


def parse_blueprint(text: str, origin: str = "<blueprint>") -> Blueprint:
    """Parse and check a blueprint; every problem is reported as ``origin:line: ...``."""
    try:
        tree, data = nodes_and_data(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{origin}:{line}: not valid YAML: {problem}") from None
    lines: dict[Path_, int] = {}
    if tree is not None:
        _index(tree, (), lines)
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}:1: a blueprint is a mapping with name and nodes")
    try:
        blueprint = Blueprint.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, origin, lines, data)) from None
    _check_templates(blueprint, origin, lines)
    return blueprint


def _index(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> None:
    """Line numbers of every key and item, by path."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, str(key.value))
            _index(value, child, lines)
            lines[child] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            _index(item, (*path, position), lines)


def _line(lines: dict[Path_, int], path: Path_) -> int:
    """The line of ``path``, or of its nearest ancestor that has one."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1


def _explain(exc: ValidationError, origin: str, lines: dict[Path_, int], data: Any) -> str:
    problems = []
    for error in exc.errors():
        path = _without_tag(tuple(error["loc"]))
        line = _line(lines, path)
        message = error["msg"].removeprefix("Value error, ")
        node_id = _node_id_in(message, data)
        if not path and node_id is not None:  # a graph problem: point at that node
            line = _line(lines, ("nodes", node_id))
        where = ".".join(str(p) for p in path) or "blueprint"
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(f"{origin}:{line}: {where}: {message}")
    return "invalid blueprint:\n  " + "\n  ".join(problems)


_KINDS = ("host", "box", "agent", "gate", "loop")


def _without_tag(loc: Path_) -> Path_:
    """pydantic puts the union's tag after a node's index (nodes.2.box.run): drop it."""
    if len(loc) > 2 and loc[0] == "nodes" and isinstance(loc[1], int) and loc[2] in _KINDS:
        return (*loc[:2], *loc[3:])
    return loc


def _node_id_in(message: str, data: Any) -> int | None:
    """The index of the node a graph message names (``node 'x' leads to ...``)."""
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, list):
        return None
    for index, node in enumerate(nodes):
        if isinstance(node, dict) and f"'{node.get('id')}'" in message:
            return index
    return None


def _check_templates(blueprint: Blueprint, origin: str, lines: dict[Path_, int]) -> None:
    problems = []
    for index, node in enumerate(blueprint.nodes):
        prompts: list[tuple[Path_, str]] = []
        if isinstance(node, AgentNode):
            prompts.append((("nodes", index, "prompt"), node.prompt))
        elif isinstance(node, LoopNode | CINode):
            prompts.append((("nodes", index, "fix", "prompt"), node.fix.prompt))
        for path, prompt in prompts:
            for name in unknown_variables(prompt):
                known = ", ".join(VARIABLES)
                problems.append(
                    f"{origin}:{_line(lines, path)}: nodes.{index}.{path[-1]}: unknown "
                    f"template variable {{{{ {name} }}}} (known: {known})"
                )
    if problems:
        raise ConfigError("invalid blueprint:\n  " + "\n  ".join(problems))
