"""Seconds from typing `golem run` to the agent's first model call, the whole command:
a new process (Python, golem's imports, the provider's SDK), its store, its engine, the
run's box, up to the first request reaching the model provider.

    .venv/bin/python bench/cli_ready.py [--runs N] [--only NAME ...] [--json]

For each fixture repository of tests/acceptance/repos/ (default pyfunctions and pyextras),
``--runs`` runs of ``golem run --model anthropic/...`` without a prepared snapshot (after
one that fills the dependency and baseline caches), then ``--runs`` with one (after `golem
prepare` and a run that caches the prepared commit's baseline), against a local server
speaking Anthropic's Messages API (src/golem/testing/anthropic_server.py): the time from
starting the process to the request's arrival at that server. Every reply is a ``finish``
call, so the run ends at once after it. The floor beside it, in the same run: a new Python
process that only imports the provider's SDK and sends it one request to the same server.
The same again through a running `golem serve` of the same configuration: ``--runs``
`golem run --submit` processes, the repository prepared for the key's tenant by `golem prepare
--submit`.
Goal (issue 32): under 2 s with a prepared snapshot on the process backend.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the fixture repositories live with the tests

from tests.acceptance.ecosystems import VERIFIED, make_remote, serve_python_wheels  # noqa: E402
from tests.blueprint.registries import LocalRegistries  # noqa: E402
from tests.service.served import serving  # noqa: E402

from golem.testing.anthropic_server import AnthropicServer, ToolUse, stream_reply  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from devbox import stats  # noqa: E402

TARGET = 2.0
GOLEM = str(Path(sys.executable).parent / "golem")
KEY = "bench-key"
MODEL = "anthropic/claude-sonnet-4-5"
SDK_FLOOR = (
    f"import anthropic, sys; c = anthropic.Anthropic(base_url=sys.argv[1], api_key='{KEY}');"
    "c.messages.create(model='m', max_tokens=1, messages=[{'role': 'user', 'content': 'x'}])"
)


def toml(config: dict[str, Any], prefix: str = "") -> str:
    """``config`` as TOML: tables as sections, values as JSON (strings, numbers, lists of
    them and booleans are spelled alike in both)."""
    lines, tables = [], []
    for key, value in config.items():
        if isinstance(value, dict):
            tables.append((f"{prefix}{key}", value))
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    text = "\n".join(lines) + "\n"
    for name, table in tables:
        text += f"\n[{name}]\n" + toml(table, f"{name}.")
    return text


def golem(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
    return subprocess.run(
        [GOLEM, *args, "--config", str(config)],
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )


def first_call(server: AnthropicServer, command: list[str], env: dict[str, str]) -> float:
    """Seconds from starting ``command`` to its first request reaching ``server``."""
    seen = len(server.requests)
    started = time.monotonic()
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True)
    requests = server.requests[seen:]
    if not requests:
        raise SystemExit(f"{command[:3]} made no model call: {done.stderr[-2000:]}")
    return requests[0].received_at - started


def measure(name: str, runs: int, scratch: Path, registries: LocalRegistries) -> dict[str, Any]:
    """``runs`` whole `golem run`s on fixture repository ``name`` without a prepared
    snapshot (after one that fills the caches), ``runs`` with one (after `golem prepare` and
    a run that caches the prepared commit's baseline), and the SDK's floor."""
    ecosystem = next(e for e in VERIFIED if e.name == name)
    place = scratch / name
    place.mkdir()
    remote = make_remote(place, ecosystem, registries)
    finish = stream_reply(ToolUse("finish", {"summary": "Nothing to change."}))
    with AnthropicServer(api_key=KEY) as server:
        server.otherwise(finish)
        settings = registries.engine_config(place / "state", redirect=True)
        settings["models"] = {"anthropic": {"base_url": server.base_url}}
        settings["forge"] = {"provider": "local"}
        config = place / "golem.toml"
        config.write_text(toml(settings))
        run = [GOLEM, "run", "--repo", str(remote), "--task", ecosystem.task, "--model", MODEL]
        run += ["--config", str(config)]
        env = {**os.environ, "ANTHROPIC_API_KEY": KEY}
        first_call(server, run, env)  # fills the dependency and baseline caches
        unprepared = [first_call(server, run, env) for _ in range(runs)]
        prepared = golem(config, "prepare", "--repo", str(remote))
        if prepared.returncode != 0:
            raise SystemExit(f"{name}: golem prepare failed: {prepared.stderr[-2000:]}")
        first_call(server, run, env)  # caches the prepared commit's baseline
        ready = [first_call(server, run, env) for _ in range(runs)]
        floor = [sys.executable, "-c", SDK_FLOOR, server.base_url]
        sdk = [first_call(server, floor, env) for _ in range(runs)]
        submitted = measure_submitted(server, settings, place, remote, ecosystem.task, runs)
    return {
        "unprepared_s": stats(unprepared),
        "prepared_s": stats(ready),
        "submitted_s": stats(submitted),
        "sdk_alone_s": stats(sdk),
    }


def measure_submitted(
    server: AnthropicServer,
    settings: dict[str, Any],
    place: Path,
    remote: Path,
    task: str,
    runs: int,
) -> list[float]:
    """``runs`` `golem run --submit` processes against a `golem serve` of the same
    configuration, the repository prepared for the key's tenant (after one run that caches
    the prepared commit's baseline)."""
    state = place / "served" / "state"
    served_config = toml({**settings, "state_dir": str(state)})
    with serving(state, config=served_config, env={"ANTHROPIC_API_KEY": KEY}) as served:
        key = served.key("bench", "trusted")
        env = {**os.environ, "GOLEM_REMOTE__URL": served.url, "GOLEM_API_KEY": key}
        prepare = [GOLEM, "prepare", "--submit", "--repo", str(remote)]
        prepared = subprocess.run(prepare, check=False, env=env, capture_output=True, text=True)
        if prepared.returncode != 0:
            raise SystemExit(f"golem prepare --submit failed: {prepared.stderr[-2000:]}")
        run = [GOLEM, "run", "--submit", "--repo", str(remote), "--task", task, "--model", MODEL]
        first_call(server, run, env)  # caches the prepared commit's baseline
        return [first_call(server, run, env) for _ in range(runs)]


def report(names: list[str], runs: int) -> dict[str, Any]:
    """``measure`` for each fixture repository of ``names``, beside one set of local
    registries."""
    scratch = Path(tempfile.mkdtemp(prefix="golem-bench-cli-"))
    scratch.chmod(0o755)  # the boxes' host user binds a kept tree from its state directory
    found: dict[str, Any] = {}
    try:
        with LocalRegistries.started(scratch / "registries") as registries:
            serve_python_wheels(registries)
            for name in names:
                found[name] = measure(name, runs, scratch, registries)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return found


def print_report(found: dict[str, Any]) -> None:
    print("Seconds from starting a `golem run` process to its first model call (p50 / p99):")
    print(
        f"  {'repository':<12}{'no prepared snapshot':>22}{'prepared snapshot':>22}"
        f"{'prepared, --submit':>22}{'the SDK alone':>22}{'prepared/SDK':>14}"
    )
    for name, figures in found.items():
        cells = [
            f"{figures[k]['p50']:6.3f} / {figures[k]['p99']:6.3f}"
            for k in ("unprepared_s", "prepared_s", "submitted_s", "sdk_alone_s")
        ]
        ratio = figures["prepared_s"]["p50"] / figures["sdk_alone_s"]["p50"]
        print(f"  {name:<12}" + "".join(f"{c:>22}" for c in cells) + f"{ratio:13.1f}x")
    for key, how in (
        ("prepared_s", "the run in the command's own process"),
        ("submitted_s", "the run queued on a running `golem serve` (--submit)"),
    ):
        worst = max(f[key]["p50"] for f in found.values())
        verdict = "met" if worst < TARGET else "NOT met"
        print(f"  prepared p50 < {TARGET} s, {how}: {verdict} (worst {worst:.2f} s)")
    print(
        "  (the SDK alone: a new Python process importing the provider's SDK and sending it "
        "one request, the floor any client pays)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", nargs="*", default=["pyfunctions", "pyextras"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = report(args.only, args.runs)
    if args.json:
        json.dump(found, sys.stdout, indent=2)
        print()
    else:
        print_report(found)


if __name__ == "__main__":
    main()
