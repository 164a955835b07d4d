"""golem.checks is verification's one public face: every name it lists is there, and the
callers above it (the blueprint, the server, the CLI, evaluation) name nothing else of it."""

from __future__ import annotations

import ast
from pathlib import Path

import golem
from golem import checks

SOURCE = Path(golem.__file__).parent


def test_golem_checks_exports_every_name_it_lists() -> None:
    assert len(checks.__all__) == len(set(checks.__all__))
    for name in checks.__all__:
        assert getattr(checks, name) is not None, name
    assert {"CheckResult", "load_conventions", "run_check", "judge", "describe_failures"} <= set(
        checks.__all__
    )


def test_code_outside_golem_checks_imports_only_its_public_names() -> None:
    deep = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path.is_relative_to(SOURCE / "checks"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("golem.checks."):
                deep.append(f"{path.relative_to(SOURCE)}: {node.module}")
            elif isinstance(node, ast.ImportFrom) and node.module == "golem.checks":
                deep += [
                    f"{path.relative_to(SOURCE)}: {alias.name}"
                    for alias in node.names
                    if alias.name not in checks.__all__
                ]
    assert deep == []
