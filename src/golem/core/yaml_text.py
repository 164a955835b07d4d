"""YAML read by libyaml's parser when PyYAML was built with it (about ten times the pure
Python one: a run reads its blueprint, and checks detection every workflow file), and once:
the node tree (where each key is, for errors that name a line) and the data from one parse.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["Loader", "load_yaml", "nodes_and_data"]

Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The safe loader: libyaml's when there, else PyYAML's own (the same documents either way)."""


def load_yaml(text: str) -> Any:
    """The data of YAML ``text`` (safe tags only); raises ``yaml.YAMLError``."""
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a safe loader


def nodes_and_data(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree of YAML ``text`` (None for an empty document) and its data, from one
    parse; raises ``yaml.YAMLError``."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        return node, (None if node is None else loader.construct_document(node))
    finally:
        loader.dispose()
