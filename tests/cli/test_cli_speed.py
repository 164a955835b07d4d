"""`golem --help` and every command's and subcommand's `--help` start fast: a command
module imports at its top only what its options need, and the stack (engines, stores,
models, the server, pydantic) where the command runs; `golem runs ls` imports the store but
not the runner, the engines or the server. The commands are found by walking the app, so a
new command is held to this too. The time itself is measured in bench/cli_startup.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from golem.cli.app import COMMANDS, app
from golem.cli.lazy import LazyCommand, LazyGroup

HEAVY = (
    "httpx",
    "docker",
    "sqlalchemy",
    "alembic",
    "aiosqlite",
    "psycopg",
    "anthropic",
    "openai",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "ray",
    "yaml",
    "jwt",
    "cryptography",
    "pydantic",
    "pydantic_settings",
    "golem.sandbox",
    "golem.blueprint",
    "golem.store",
    "golem.service",
    "golem.agent",
    "golem.forge",
    "golem.context",
    "golem.cluster",
    "golem.eval",
)
"""What no help text needs: a module here or under one of these packages."""

STORE = ("sqlalchemy", "aiosqlite", "alembic", "psycopg", "pydantic", "pydantic_settings")
NOT_FOR_LISTING = tuple(name for name in HEAVY if name not in (*STORE, "golem.store"))
"""What `golem runs ls` does not need: it reads runs from the store, nothing runs them."""

HELP_OF_EACH = """
import json, sys
import typer
from typer.core import TyperGroup
from golem.cli.app import app, main

def paths(command, path):
    yield path
    if isinstance(command, TyperGroup):
        context = typer.Context(command, info_name=path[-1] if path else "golem")
        for name in command.list_commands(context):
            found = command.get_command(context, name)
            yield from paths(getattr(found, "load", lambda: found)(), [*path, name])

top = sys.argv[1]
root = typer.main.get_command(app)
start = root if top == "" else root.get_command(typer.Context(root), top).load()
shown = {}
for path in list(paths(start, [] if top == "" else [top])):
    sys.argv = ["golem", *path, "--help"]
    try:
        main()
    except SystemExit as exc:
        shown[" ".join(path)] = exc.code
print(json.dumps({"shown": shown, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def heavy_among(modules: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


def helps_of(top: str) -> tuple[dict[str, int], list[str]]:
    """Each `golem TOP ... --help` under ``top`` ("" for golem's own) with its exit code,
    and the modules imported to print them all (in one fresh interpreter)."""
    done = subprocess.run(
        [sys.executable, "-c", HELP_OF_EACH, top],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stderr.splitlines()[-1])
    return found["shown"], found["modules"]


@pytest.mark.parametrize("top", ["", *COMMANDS])
def test_each_commands_help_imports_no_heavy_library(top: str) -> None:
    shown, modules = helps_of(top)
    assert shown, f"no help was shown under {top!r}"
    if top in ("", "runs"):  # the walk goes down: every command below is shown
        assert "runs ls" in shown, shown
    assert all(code in (0, None) for code in shown.values()), shown
    if top:
        assert COMMANDS[top][0].split(":")[0] in modules
    assert heavy_among(modules) == [], f"`golem {top} --help` and below: {sorted(shown)}"


def test_runs_ls_imports_the_store_but_nothing_that_runs(tmp_path: Path) -> None:
    script = (
        "import sys\nsys.argv = ['golem', 'runs', 'ls']\nfrom golem.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOLEM_", "XDG_"))}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**env, "GOLEM_STATE_DIR": str(tmp_path), "HOME": str(tmp_path)},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    modules = done.stderr.split()
    assert done.stdout.strip() == "no runs", done.stderr
    assert "golem.store" in modules
    assert heavy_among(modules, NOT_FOR_LISTING) == []


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


def test_help_written_out_names_what_its_source_defines() -> None:
    """Help texts that name a heavy module's values (written out, to keep it unimported)."""
    from golem.blueprint.loader import BUILTINS
    from golem.cli.blueprint_cmd import show_command
    from golem.cli.doctor_cmd import doctor_command
    from golem.cli.image_cmd import bootstrap_command
    from golem.sandbox.images import FLAVOURS
    from golem.sandbox.probe import PROBE_TIMEOUT

    shown = show_command.__defaults__[0].help  # type: ignore[index]
    assert shown.endswith(f"one of: {', '.join(BUILTINS)}."), shown
    flavours = bootstrap_command.__defaults__[0].help  # type: ignore[index]
    assert flavours == f"One of: {', '.join(FLAVOURS)}.", flavours
    timeout = doctor_command.__defaults__[1].help  # type: ignore[index]
    assert f"(default: {PROBE_TIMEOUT:g})" in timeout, timeout
