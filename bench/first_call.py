"""From `golem run` to the agent's first model call, with and without a prepared snapshot.

    PYTHONPATH=src:. .venv/bin/python bench/run.py --first-call [--runs N] [--json]

On real repositories from tests/acceptance/repos/ (pyplain: plain unittest, no install;
nodelock: a Node package whose lockfile npm installs from a local registry), each a bare
repository as a forge serves it, with the scripted model of its acceptance test, through
one long-lived process engine whose warm pool was filled first. Interleaved for ``N``
rounds (after one warm-up of each), each case is timed from ``Runner.start`` to the
agent's first ``ModelCalled`` event:

* ``without``: ``[prepared] enabled = false``: clone, the install (from the dependency
  cache, which the warm-up filled), the copy into the box, setup, baseline;
* ``with``: the same run, its box from the repository's prepared snapshot (``golem
  prepare`` ran once before): the host's ``.git`` placed, the tree moved, no dependency
  placed, setup skipped;
* ``empty box``: a session from the warm pool running ``true`` (the floor a box costs).

Goals (issue 32): under 2 s with a prepared snapshot on the process backend; a warm
snapshot start within 2x a pooled empty box of the same backend.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.acceptance.ecosystems import NODE_PACKAGE, PLAIN_UNITTEST, Ecosystem, scripted_model
from tests.acceptance.ecosystems import make_remote as make_ecosystem_remote
from tests.blueprint.registries import LocalRegistries

from golem.agent.events import ModelCalled
from golem.blueprint import Runner, RunRequest
from golem.blueprint.events import AgentStep, RunEvent
from golem.core import GolemConfig, load_config
from golem.sandbox import LocalEngine
from golem.store import SqlStore, Store

REPOSITORIES = (PLAIN_UNITTEST, NODE_PACKAGE)
GOAL_WITH = 2.0
GOAL_RATIO = 2.0


class FirstCall:
    """The time of the run's first model call (``perf_counter``), once it came."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, event: RunEvent) -> None:
        if (
            self.at is None
            and isinstance(event, AgentStep)
            and isinstance(event.event, ModelCalled)
        ):
            self.at = time.perf_counter()


async def to_first_call(
    config: GolemConfig, engine: LocalEngine, store: Store, request: RunRequest
) -> float:
    first = FirstCall()
    runner = Runner(config, engine=engine, store=store, on_event=first)
    started = time.perf_counter()
    state = await runner.start(request)
    if first.at is None:
        raise SystemExit(f"{request.repo}: no model call ({state.status}: {state.error})")
    return first.at - started


async def empty_box(engine: LocalEngine) -> float:
    started = time.perf_counter()
    await engine.execute(["true"])
    return time.perf_counter() - started


async def measure_repository(ecosystem: Ecosystem, runs: int, scratch: Path) -> dict[str, Any]:
    home = scratch / ecosystem.name
    home.mkdir()
    with LocalRegistries.started(home / "registries") as registries:
        remote = make_ecosystem_remote(home, ecosystem, registries)
        model = scripted_model(home, ecosystem)
        settings = registries.engine_config(home / "state", redirect=True)
        warm = load_config(settings, files=[])
        cold = load_config({**settings, "prepared": {"enabled": False}}, files=[])
        store = await SqlStore.open(warm)
        request = RunRequest(repo=str(remote), task=ecosystem.task, model=model)
        samples: dict[str, list[float]] = {"without": [], "with": [], "empty box": []}
        try:
            async with LocalEngine(warm) as engine:
                await engine.start(prewarm=True)
                await to_first_call(cold, engine, store, request)  # fills the dependency cache
                prepare = RunRequest(repo=str(remote), task="prepare", blueprint="prepare")
                prepared = await Runner(warm, engine=engine, store=store).start(prepare)
                if prepared.status != "succeeded":
                    raise SystemExit(f"{ecosystem.name}: prepare {prepared.error}")
                await to_first_call(warm, engine, store, request)  # a warm-up
                for _ in range(runs):
                    samples["without"].append(await to_first_call(cold, engine, store, request))
                    samples["with"].append(await to_first_call(warm, engine, store, request))
                    samples["empty box"].append(await empty_box(engine))
        finally:
            await store.close()
    return {"repository": ecosystem.name, "runs": runs, "samples": samples}


async def measure(runs: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="golem-bench-first-call-") as directory:
        scratch = Path(directory)
        scratch.chmod(0o755)
        return [await measure_repository(e, runs, scratch) for e in REPOSITORIES]


def report(measured: list[dict[str, Any]], stats: Any) -> dict[str, Any]:
    """Each repository's p50 and p99 per case, and the ratio of ``with`` to an empty box."""
    out: dict[str, Any] = {"backend": "process", "repositories": {}}
    for entry in measured:
        cases = {name: stats(values) for name, values in entry["samples"].items()}
        cases["with/empty box p50"] = cases["with"]["p50"] / cases["empty box"]["p50"]
        out["repositories"][entry["repository"]] = {"runs": entry["runs"], **cases}
    return out


def print_report(summary: dict[str, Any]) -> None:
    print("from golem run to the first model call, process backend (seconds):")
    for name, cases in summary["repositories"].items():
        print(f"  {name} ({cases['runs']} runs each):")
        for case in ("without", "with", "empty box"):
            got = cases[case]
            print(f"    {case:<10} p50 {got['p50']:7.3f}  p99 {got['p99']:7.3f}")
        ratio, with_p50 = cases["with/empty box p50"], cases["with"]["p50"]
        print(
            f"    with a prepared snapshot: {with_p50:.3f} s (goal < {GOAL_WITH} s: "
            f"{'met' if with_p50 < GOAL_WITH else 'NOT met'}), {ratio:.1f}x a pooled empty "
            f"box (goal <= {GOAL_RATIO}x: {'met' if ratio <= GOAL_RATIO else 'NOT met'})"
        )


def run(runs: int, as_json: bool, stats: Any) -> None:

    summary = report(asyncio.run(measure(runs)), stats)
    if as_json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        print_report(summary)
