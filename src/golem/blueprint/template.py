"""Prompt templates of agent steps: ``{{ name }}`` replaced by a value of the run.

Nothing else is evaluated: no expressions, no filters, no attribute access. A name that is
not one of ``VARIABLES`` is an error when the blueprint is loaded, not when it runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["VARIABLES", "render", "unknown_variables"]

VARIABLES: dict[str, str] = {
    "task": "the task: its text, or the issue's title and body",
    "repo": "the repository, as given to golem run",
    "branch": "the branch the run works on",
    "failures": "the failing checks' commands and output tails (fix steps)",
    "checks": "the commands that verify the work; in fix steps, each with its last result",
    "round": "the fix round, from 1 (fix steps)",
    "max_rounds": "the loop's cap on fix rounds (fix steps)",
}
"""Names a template may use, and what they hold."""

_NAME = re.compile(r"{{\s*([A-Za-z_][A-Za-z0-9_]*)\s*}}")


def unknown_variables(template: str) -> list[str]:
    """Names used in ``template`` that are not VARIABLES, in order of appearance."""
    return [name for name in _NAME.findall(template) if name not in VARIABLES]


def render(template: str, values: Mapping[str, object]) -> str:
    """``template`` with every ``{{ name }}`` replaced (missing values become empty)."""
    return _NAME.sub(lambda match: str(values.get(match.group(1), "")), template)
