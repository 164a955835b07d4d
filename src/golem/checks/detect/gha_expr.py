"""GitHub Actions expressions in ``run:`` lines: ``${{ matrix.* }}`` and ``${{ env.* }}``
resolved from what the workflow writes; anything else is known only on the runner."""

from __future__ import annotations

import itertools
import re
from typing import Any

__all__ = ["EXPRESSION", "expand", "literal_env", "matrix_of"]

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
ANY_VALUE = re.compile(r"(version|python|node|go|rust|toolchain|os|platform|runner)", re.IGNORECASE)
"""Matrix keys whose every value runs the same checks: the first value stands for all."""
MAX_MATRIX = 8


def expand(run: str, matrix: dict[str, list[str]], env: dict[str, str]) -> list[tuple[str, str]]:
    """``run`` with its expressions resolved: one script per value of a matrix key that
    changes what runs; (script, why) with a reason when it cannot be resolved."""
    keys = list(dict.fromkeys(EXPRESSION.findall(run)))
    choices: list[list[tuple[str, str]]] = []
    for key in keys:
        values = _values(key, matrix, env)
        if values is None:
            return [(run, f"uses ${{{{ {key} }}}}, known only on the CI runner")]
        choices.append([(key, value) for value in values])
    scripts = []
    for combination in itertools.islice(itertools.product(*choices), MAX_MATRIX):
        script = run
        for key, value in combination:
            pattern = r"\$\{\{\s*" + re.escape(key) + r"\s*\}\}"
            script = re.sub(pattern, value.replace("\\", "\\\\"), script)
        scripts.append((script, ""))
    return scripts


def _values(key: str, matrix: dict[str, list[str]], env: dict[str, str]) -> list[str] | None:
    scope, _, name = key.partition(".")
    if scope == "env" and name in env:
        return [env[name]]
    if scope != "matrix" or name not in matrix or not matrix[name]:
        return None
    values = matrix[name]
    return values[:1] if ANY_VALUE.search(name) else values


def matrix_of(job: dict[str, Any]) -> dict[str, list[str]]:
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if not isinstance(matrix, dict):
        return {}
    found: dict[str, list[str]] = {}
    for key, values in matrix.items():
        if isinstance(values, list):
            found[str(key)] = [str(v) for v in values if isinstance(v, str | int | float)]
    include = matrix.get("include")
    for entry in include if isinstance(include, list) else []:
        for key, value in entry.items() if isinstance(entry, dict) else ():
            if isinstance(value, str | int | float) and str(value) not in found.setdefault(
                str(key), []
            ):
                found[str(key)].append(str(value))
    return found


def literal_env(value: Any, outer: dict[str, str]) -> dict[str, str]:
    env = dict(outer)
    for key, item in value.items() if isinstance(value, dict) else ():
        if item is None:  # `KEY:` with nothing after it is the empty string
            env[str(key)] = ""
        elif isinstance(item, str | int | float | bool) and "${{" not in str(item):
            env[str(key)] = str(item).lower() if isinstance(item, bool) else str(item)
    return env
