"""`golem --help` starts fast: the command groups are loaded only when one of them runs, so
the heavy libraries (engines, stores, models, the server) are not imported to print help.
The time itself is measured in bench/cli_startup.py."""

from __future__ import annotations

import os
import subprocess
import sys

import typer

from golem.cli.app import COMMANDS, app
from golem.cli.lazy import LazyCommand, LazyGroup

HEAVY = (
    "httpx",
    "docker",
    "sqlalchemy",
    "alembic",
    "anthropic",
    "openai",
    "fastapi",
    "uvicorn",
    "pydantic",
    "golem.sandbox",
    "golem.blueprint",
    "golem.store",
    "golem.service",
    "golem.agent",
    "golem.forge",
)
LOADED_AFTER = """
import sys
sys.argv = ["golem", *sys.argv[1:]]
from golem.cli.app import main
try:
    main()
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_after(*args: str) -> tuple[str, set[str]]:
    """What `golem ARGS` prints, and the modules it imported on the way."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=60,
        check=False,
    )
    return done.stdout, set(done.stderr.split())


def heavy_among(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY))


def test_golem_help_imports_no_heavy_library() -> None:
    output, modules = loaded_after("--help")
    assert "golem.cli.app" in modules
    assert heavy_among(modules) == []
    for name in COMMANDS:
        assert f" {name} " in output, f"{name} is missing from golem --help"


def test_a_command_group_still_loads_its_commands_when_run() -> None:
    output, modules = loaded_after("runs", "--help")
    assert "golem.cli.runs_cmd" in modules
    assert "show" in output, output
    assert "cancel" in output, output


def test_each_commands_summary_in_the_listing_is_its_own() -> None:
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    context = typer.Context(group, info_name="golem")
    for name in COMMANDS:
        listed = group.get_command(context, name)
        assert isinstance(listed, LazyCommand)
        loaded = listed.load()
        own = (loaded.help or "").split("\n\n")[0].replace("\n", " ").strip()
        assert listed.help == own, f"{name}: the table's summary differs from its docstring"


def test_golem_eval_help_imports_neither_the_eval_package_nor_what_runs_golem() -> None:
    output, modules = loaded_after("eval", "--help")
    assert "golem.cli.eval_cmd" in modules
    for command in ("make", "run", "report", "compare"):
        assert f" {command} " in output, f"{command} is missing from golem eval --help"
    running = [m for m in heavy_among(modules) if not m.startswith("pydantic")]
    assert running == []
    assert sorted(m for m in modules if m.startswith("golem.eval")) == []
