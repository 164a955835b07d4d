"""How long a run takes to be ready: from `golem run` to the agent's first model call, on
each fixture repository of tests/acceptance (one per ecosystem), with no golem configuration.

    .venv/bin/python bench/devbox.py [--runs N] [--only NAME ...] [--json]

For each repository, three figures, each over several runs (median and p99):

* by hand: the floor: `git clone` of the repository and its dependency install done
  directly on this machine, with the same commands golem detects and the same local
  registries (no box, no golem);
* golem, first run: a fresh state directory (nothing cached): clone, context, the install
  in its own box, the run's box, setup, the baseline checks, up to the first model call;
* golem, warm: the same repository again (dependencies and the baseline cached);
* golem, prepared: the same again, after `golem prepare` (the ``prepare`` blueprint): the
  run's box starts from the repository's prepared snapshot (the host's ``.git`` placed,
  the tree moved, no dependency placed, setup skipped);
* golem, prepared, served: the same through one engine that lives across the runs, as a
  ``golem serve``'s does: its warm pool keeps a box with the prepared snapshot unpacked
  (docs/snapshots.md#warm-boxes-from-a-snapshot), filled after the first run, so the run's
  box skips the copy;
* empty box: a session from a started engine's warm pool running ``true``, the floor a box
  of the same backend costs (issue 32 compares a prepared start with it).

The ratios compare golem with the floor measured in the same run. Targets: warm <= 2 s;
prepared < 2 s on the process backend, and within 2x a pooled empty box (issue 32).
The registries are local servers speaking PyPI's and npm's protocols
(tests/blueprint/registries.py), so the figures leave the internet out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the fixture repositories live with the tests

from tests.acceptance.ecosystems import (  # noqa: E402
    VERIFIED,
    Ecosystem,
    make_remote,
    scripted_model,
    serve_python_wheels,
)
from tests.blueprint.registries import ADDRESS, LocalRegistries  # noqa: E402

from golem.agent.events import ModelCalled  # noqa: E402
from golem.blueprint import Runner, RunRequest  # noqa: E402
from golem.blueprint.events import AgentStep, RunEvent  # noqa: E402
from golem.checks import load_conventions  # noqa: E402
from golem.core import GolemConfig, load_config  # noqa: E402
from golem.sandbox import LocalEngine  # noqa: E402
from golem.store import SqlStore  # noqa: E402

TARGET_WARM = 2.0
TARGET_PREPARED = 2.0
TARGET_RATIO = 2.0


class FirstModelCall:
    """Notes when the run's agent first calls its model."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.at: float | None = None

    def __call__(self, event: RunEvent) -> None:
        if (
            self.at is None
            and isinstance(event, AgentStep)
            and isinstance(event.event, ModelCalled)
        ):
            self.at = time.perf_counter() - self.started


def by_hand(remote: Path, scratch: Path, registries: LocalRegistries) -> float:
    """Seconds to clone the repository and install its dependencies on this machine."""
    target = Path(tempfile.mkdtemp(dir=scratch))
    started = time.perf_counter()
    subprocess.run(["git", "clone", "-q", str(remote), str(target / "repo")], check=True)
    repo = target / "repo"
    conventions = load_conventions(repo)
    env = {**os.environ, **by_address(registries)}
    for name, value in conventions.env.items():
        env[name] = value.replace("/workspace", str(repo))
    for command in conventions.install:
        subprocess.run(command.replace("/workspace", str(repo)), shell=True, cwd=repo, env=env,  # noqa: S602 - the repository's own commands
                       check=True, capture_output=True)  # fmt: skip
    elapsed = time.perf_counter() - started
    shutil.rmtree(target, ignore_errors=True)
    return elapsed


def by_address(registries: LocalRegistries) -> dict[str, str]:
    """The package managers' settings for the local registries, by address: their names
    resolve only through the test DNS server golem's proxy asks."""
    base = f"http://{ADDRESS}:{registries.port}"
    return {
        "PIP_INDEX_URL": f"{base}/simple/",
        "PIP_TRUSTED_HOST": ADDRESS,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "npm_config_registry": f"{base}/npm/",
        "npm_config_replace_registry_host": "always",
        "GOPROXY": f"{base}/go",
        "GOSUMDB": "off",
        "GOFLAGS": "-modcacherw",
    }


def configured(state_dir: Path, registries: LocalRegistries) -> GolemConfig:
    return load_config(registries.engine_config(state_dir, redirect=True), files=[])


async def to_first_model_call(
    config: GolemConfig,
    remote: Path,
    ecosystem: Ecosystem,
    model: str,
    served: LocalEngine | None = None,
) -> float:
    """Seconds from the run's request (the store opened, the engine started, as `golem
    run` does; with ``served``, that engine, started once, as a `golem serve`'s) to its
    agent's first model call."""
    timing = FirstModelCall()
    store = await SqlStore.open(config)
    try:
        async with contextlib.AsyncExitStack() as stack:
            engine = served or await stack.enter_async_context(LocalEngine(config))
            runner = Runner(config, engine=engine, store=store, on_event=timing)
            request = RunRequest(repo=str(remote), task=ecosystem.task, model=model)
            state = await runner.start(request)
            if state.status != "succeeded" or timing.at is None:
                raise SystemExit(f"{ecosystem.name}: the run ended {state.status}: {state.error}")
            return timing.at
    finally:
        await store.close()


async def served_runs(
    config: GolemConfig, remote: Path, ecosystem: Ecosystem, model: str, runs: int
) -> list[float]:
    """Prepared runs through one long-lived engine: the first fills its warm box from the
    prepared snapshot (not counted), each later one takes a warm box (its fill awaited
    between runs, as a run arriving a little later finds it)."""
    async with LocalEngine(config) as engine:
        await engine.start()  # long-lived, as a server's: it keeps warm boxes
        await to_first_model_call(config, remote, ecosystem, model, engine)
        found = []
        for _ in range(runs):
            await engine.warm.settled()
            found.append(await to_first_model_call(config, remote, ecosystem, model, engine))
        return found


async def prepare(config: GolemConfig, remote: Path) -> None:
    """`golem prepare` of the repository's default branch."""
    store = await SqlStore.open(config)
    try:
        async with LocalEngine(config) as engine:
            request = RunRequest(repo=str(remote), task="prepare", blueprint="prepare")
            state = await Runner(config, engine=engine, store=store).start(request)
            if state.status != "succeeded":
                raise SystemExit(
                    f"{remote.name}: golem prepare ended {state.status}: {state.error}"
                )
    finally:
        await store.close()


async def empty_boxes(config: GolemConfig, runs: int) -> list[float]:
    """Seconds a session from a started engine's warm pool takes to run ``true``."""
    async with LocalEngine(config) as engine:
        await engine.start(prewarm=True)
        await engine.execute(["true"])  # a warm-up
        found = []
        for _ in range(runs):
            started = time.perf_counter()
            await engine.execute(["true"])
            found.append(time.perf_counter() - started)
        return found


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = (
        statistics.quantiles(ordered, n=100, method="inclusive")[98]
        if len(ordered) > 1
        else ordered[0]
    )
    return {"p50": statistics.median(ordered), "p99": p99, "n": len(ordered)}


async def unprepared_and_prepared(
    config: GolemConfig, remote: Path, ecosystem: Ecosystem, model: str, runs: int
) -> tuple[list[float], list[float]]:
    """Seconds to the first model call of ``runs`` runs with the caches warm and no
    prepared snapshot, then of ``runs`` after `golem prepare` (each after a run not counted:
    the first fills the caches, the second caches the prepared commit's baseline)."""
    await to_first_model_call(config, remote, ecosystem, model)
    warm = [await to_first_model_call(config, remote, ecosystem, model) for _ in range(runs)]
    await prepare(config, remote)
    await to_first_model_call(config, remote, ecosystem, model)
    ready = [await to_first_model_call(config, remote, ecosystem, model) for _ in range(runs)]
    return warm, ready


def ready_report(names: list[str], runs: int) -> dict[str, dict[str, Any]]:
    """For the repositories ``names``: seconds from `golem run` to the first model call
    without a prepared snapshot (``unprepared_s``) and with one (``prepared_s``)."""
    scratch = Path(tempfile.mkdtemp(prefix="golem-bench-ready-"))
    scratch.chmod(0o755)  # the boxes' host user binds a kept tree from its state directory
    report: dict[str, dict[str, Any]] = {}
    try:
        with LocalRegistries.started(scratch / "registries") as registries:
            serve_python_wheels(registries)
            for ecosystem in [e for e in VERIFIED if e.name in names]:
                place = scratch / ecosystem.name
                place.mkdir()
                remote = make_remote(place, ecosystem, registries)
                model = scripted_model(place, ecosystem)
                config = configured(place / "state", registries)
                warm, ready = asyncio.run(
                    unprepared_and_prepared(config, remote, ecosystem, model, runs)
                )
                report[ecosystem.name] = {"unprepared_s": stats(warm), "prepared_s": stats(ready)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report


async def measure(
    ecosystem: Ecosystem, runs: int, scratch: Path, registries: LocalRegistries
) -> dict[str, Any]:
    place = scratch / ecosystem.name
    place.mkdir()
    remote = make_remote(place, ecosystem, registries)
    model = scripted_model(place, ecosystem)
    hand = [by_hand(remote, place, registries) for _ in range(runs)]
    cold = []
    for index in range(runs):
        cold.append(
            await to_first_model_call(
                configured(place / f"cold-{index}", registries), remote, ecosystem, model
            )
        )
    warm_config = configured(place / "warm", registries)
    warm, ready = await unprepared_and_prepared(warm_config, remote, ecosystem, model, runs)
    served = await served_runs(warm_config, remote, ecosystem, model, runs)
    return {
        "by_hand_s": stats(hand),
        "first_run_s": stats(cold),
        "warm_s": stats(warm),
        "prepared_s": stats(ready),
        "served_s": stats(served),
        "empty_box_s": stats(await empty_boxes(warm_config, runs)),
    }


def print_report(report: dict[str, dict[str, Any]]) -> None:
    print("Seconds from `golem run` to the agent's first model call (p50 / p99):")
    heads = ("repository", "by hand", "first run", "warm", "prepared", "served", "empty box")
    print(f"  {heads[0]:<11}" + "".join(f"{h:>17}" for h in heads[1:]) + "  prepared/empty")
    for name, figures in report.items():
        keys = ("by_hand_s", "first_run_s", "warm_s", "prepared_s", "served_s", "empty_box_s")
        cells = [f"{figures[k]['p50']:6.3f} / {figures[k]['p99']:6.3f}" for k in keys]
        ratio = figures["prepared_s"]["p50"] / figures["empty_box_s"]["p50"]
        print(f"  {name:<11}" + "".join(f"{c:>17}" for c in cells) + f"  {ratio:8.1f}x")
    worst = max(figures["warm_s"]["p50"] for figures in report.values())
    verdict = "met" if worst <= TARGET_WARM else "NOT met"
    print(f"  warm target p50 <= {TARGET_WARM} s: {verdict} (worst {worst:.2f} s)")
    ready = max(figures["prepared_s"]["p50"] for figures in report.values())
    ratio = max(f["prepared_s"]["p50"] / f["empty_box_s"]["p50"] for f in report.values())
    print(
        f"  prepared: p50 < {TARGET_PREPARED} s {'met' if ready < TARGET_PREPARED else 'NOT met'} "
        f"(worst {ready:.2f} s); within {TARGET_RATIO}x a pooled empty box "
        f"{'met' if ratio <= TARGET_RATIO else 'NOT met'} (worst {ratio:.1f}x)"
    )
    served = max(figures["served_s"]["p50"] for figures in report.values())
    print(
        f"  prepared through a long-lived engine (a warm box): p50 < {TARGET_PREPARED} s "
        f"{'met' if served < TARGET_PREPARED else 'NOT met'} (worst {served:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None, help="Repository names (default: all).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chosen = [e for e in VERIFIED if args.only is None or e.name in args.only]
    scratch = Path(tempfile.mkdtemp(prefix="golem-bench-devbox-"))
    scratch.chmod(0o755)
    report: dict[str, dict[str, Any]] = {}
    try:
        with LocalRegistries.started(scratch / "registries") as registries:
            serve_python_wheels(registries)
            for ecosystem in chosen:
                report[ecosystem.name] = asyncio.run(
                    measure(ecosystem, args.runs, scratch, registries)
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report)


if __name__ == "__main__":
    main()
