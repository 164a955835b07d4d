"""How long `golem --help` and `golem --version` take as a user runs them (a new Python
process each time), beside the bare interpreter's start-up.

    .venv/bin/python bench/cli_startup.py [--runs 20] [--json]

Each command runs ``--runs`` times in a fresh process; wall time from spawn to exit.
Target: `golem --help` under 0.3 s (it took 1.6-2.0 s when every command group and the
libraries behind them were imported to print the listing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "golem --version": [sys.executable, "-m", "golem", "--version"],
    "golem --help": [sys.executable, "-m", "golem", "--help"],
    "golem runs --help": [sys.executable, "-m", "golem", "runs", "--help"],
}


def timed(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    figures = {}
    for name, argv in COMMANDS.items():
        times = sorted(timed(argv, options.runs))
        figures[name] = {
            "p50": statistics.median(times),
            "max": times[-1],
        }
    if options.json:
        print(json.dumps(figures, indent=2))
        return
    print("| command | p50 | max |\n| --- | --- | --- |")
    for name, figure in figures.items():
        print(f"| `{name}` | {figure['p50']:.3f} s | {figure['max']:.3f} s |")


if __name__ == "__main__":
    main()
