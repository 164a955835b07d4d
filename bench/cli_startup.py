"""How long the CLI takes to start as a user runs it (a new Python process each time):
`golem --version`, `golem --help`, every `golem <command> [<subcommand>] --help` (found by
walking the app) and `golem runs ls` on an empty store, beside the bare interpreter's
`python -c pass`.

    .venv/bin/python bench/cli_startup.py [--runs 30] [--only runs] [--json]

Each command runs once untimed (the store is made then), then ``--runs`` rounds of one run
of each command (interleaved, so that a busy moment on a shared machine falls on all alike);
wall time from spawn to exit. Targets (issue 30): every help under 0.3 s, `golem runs ls`
under 0.6 s. All run in a scratch golem home (state directory, HOME), removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import typer
from typer.core import TyperCommand, TyperGroup

from golem.cli.app import app

GOLEM = [sys.executable, "-m", "golem"]


def help_paths(command: TyperCommand | TyperGroup, path: list[str]) -> Iterator[list[str]]:
    """``path`` and every command below it, as `golem` would be given them."""
    yield path
    if isinstance(command, TyperGroup):
        context = typer.Context(command, info_name=path[-1] if path else "golem")
        for name in command.list_commands(context):
            found = command.get_command(context, name)
            assert found is not None
            loaded = found.load() if hasattr(found, "load") else found
            yield from help_paths(loaded, [*path, name])


def commands() -> dict[str, list[str]]:
    """Each measured command's name and argv."""
    measured = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "golem --version": [*GOLEM, "--version"],
    }
    for path in help_paths(typer.main.get_command(app), []):
        measured[" ".join(["golem", *path, "--help"])] = [*GOLEM, *path, "--help"]
    measured["golem runs ls"] = [*GOLEM, "runs", "ls"]
    return measured


def timed(
    measured: dict[str, list[str]], runs: int, env: dict[str, str], cwd: str
) -> dict[str, list[float]]:
    """Each command's wall times, in rounds of one run of every command: a busy moment on
    a shared machine falls on all of them alike, `python -c pass` included."""
    for argv in measured.values():
        subprocess.run(argv, capture_output=True, check=True, env=env, cwd=cwd)
    times: dict[str, list[float]] = {name: [] for name in measured}
    for _ in range(runs):
        for name, argv in measured.items():
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True, env=env, cwd=cwd)
            times[name].append(time.perf_counter() - start)
    return times


def p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--only", help="Only commands whose name contains this.")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="golem-cli-startup-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GOLEM_", "XDG_"))}
        env.update(GOLEM_STATE_DIR=home, HOME=home)
        measured = {
            name: argv
            for name, argv in commands().items()
            if not options.only or options.only in name or name == "python -c pass"
        }
        times = timed(measured, options.runs, env, home)
    figures = {
        name: {"p50": statistics.median(each), "p99": p99(each)} for name, each in times.items()
    }
    floor = figures["python -c pass"]["p50"]
    if options.json:
        print(json.dumps({"runs": options.runs, "figures": figures}, indent=2))
        return
    print(f"{options.runs} runs each\n")
    print("| command | p50 | p99 | p50 / `python -c pass` |\n| --- | --- | --- | --- |")
    for name, figure in figures.items():
        ratio = figure["p50"] / floor
        print(f"| `{name}` | {figure['p50']:.3f} s | {figure['p99']:.3f} s | {ratio:.1f}x |")


if __name__ == "__main__":
    main()
