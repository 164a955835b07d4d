"""The virtual CPU of microVM guests under TCG emulation: which model runs the guest fastest.

    .venv/bin/python bench/microvm_cpu.py [--runs N] [--models M ...] [--mib S] [--load]

Under TCG, QEMU emulates every instruction the guest runs; ``-cpu`` decides which ones the
guest is told it has, and code that picks its fastest path by CPUID (glibc's string
functions, Go's runtime, hashing and compression libraries) then runs the one TCG emulates
slowest or fastest. For each model, rounds interleaved (so load from elsewhere hits each
alike), every box cold, on golem's own engine (LocalEngine, microvm backend, devbox):

* ``boot``: a box started and its first ``true`` answered (the supervisor's first answer);
* ``engine``: a box with ``containers`` started and its first ``docker info`` answered;
* ``docker version``: the Go client's start and one request to dockerd;
* ``sha256sum`` and ``gzip``: of an ``--mib`` MiB file (the head of the test PostgreSQL
  image archive: binaries and text, as a real workload mixes them);
* ``python``: import json, hashlib and sqlite3, then a loop of all three;
* ``docker load`` (with ``--load``): the test PostgreSQL image archive, already in the guest.

A model may end in ``@CACHE``: the engine disk's cache mode (``writeback`` otherwise).

Each case is timed twice: its wall time, and (``... cpu``) the CPU time of the guest's QEMU
process (for ``boot`` and ``engine``: from QEMU's start to the answer), which load from
elsewhere moves far less. Prints the median per case and model and its ratio to the first
model's (``max`` unless ``--models`` says otherwise). Under TCG every figure is seconds:
keep ``--runs`` small.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from golem.core import load_config
from golem.core.config import MicroVMBackendConfig
from golem.sandbox import Box, LocalEngine
from golem.sandbox.backends.microvm import qemu
from golem.sandbox.probe import alone

MODELS = [
    "max",
    "max,-avx,-avx2,-f16c,-fma,-sha-ni",
    "Westmere",
    "Nehalem",
]
PYTHON = """
import hashlib, json, sqlite3
db = sqlite3.connect(":memory:")
db.execute("create table t (k integer primary key, v text)")
for i in range(20000):
    v = json.dumps({"i": i, "h": hashlib.sha256(str(i).encode()).hexdigest()})
    db.execute("insert into t values (?, ?)", (i, v))
print(db.execute("select count(*) from t").fetchone()[0])
"""
CONTAINERS = {"containers": True, "pids": 1024}


def _qemu_cpu(box: Box) -> float:
    """CPU seconds the box's QEMU process used so far (every thread): what the guest's work
    cost, far less sensitive to load from elsewhere than the time it took."""
    vm = box._started  # type: ignore[attr-defined]
    fields = Path(f"/proc/{vm.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _timed(box: Box, argv: list[str], took: dict[str, float], case: str) -> None:
    """Run ``argv``, keep its wall time as ``case`` and its QEMU CPU time as ``case cpu``."""
    cpu, start = _qemu_cpu(box), time.perf_counter()
    result = await box.execute(argv)
    took[case] = time.perf_counter() - start
    took[f"{case} cpu"] = _qemu_cpu(box) - cpu
    if result.exit_code != 0:
        raise RuntimeError(f"{argv}: exited with {result.exit_code}: {result.stderr_text}")


async def one_round(engine: LocalEngine, sample: bytes, archive: Path | None) -> dict[str, float]:
    """Every case once, under the CPU model qemu.TCG_CPU names now."""
    took: dict[str, float] = {}
    start = time.perf_counter()
    async with engine.session(engine.spec()) as box:
        await _timed(box, ["true"], {}, "")
        took["boot"] = time.perf_counter() - start
        took["boot cpu"] = _qemu_cpu(box)
    start = time.perf_counter()
    async with engine.session(engine.spec(**CONTAINERS)) as box:
        await _timed(box, ["docker", "info"], {}, "")
        took["engine"] = time.perf_counter() - start
        took["engine cpu"] = _qemu_cpu(box)
        await _timed(box, ["docker", "version"], took, "docker version")
        await box.put_file("sample.bin", sample)
        await _timed(box, ["sha256sum", "sample.bin"], took, "sha256sum")
        await _timed(box, ["sh", "-c", "gzip -c sample.bin >/dev/null"], took, "gzip")
        await _timed(box, ["python3", "-c", PYTHON], took, "python")
        if archive is not None:
            await box.execute(["rm", "-f", "sample.bin"])
            await box.put_file("postgres.tar", archive.read_bytes())
            await _timed(box, ["docker", "load", "-i", "postgres.tar"], took, "docker load")
    return took


async def run_all(
    models: list[str], runs: int, mib: int, load: bool, state_dir: str, image: str
) -> dict[str, Any]:
    from tests.checks.postgres_image import postgres_archive

    archive = postgres_archive()
    with archive.open("rb") as handle:
        sample = handle.read(mib * 1024 * 1024)
    base = load_config({"state_dir": state_dir}, files=[])
    config = alone(base, MicroVMBackendConfig(accel="tcg", image=Path(image)))
    samples: dict[str, dict[str, list[float]]] = {model: {} for model in models}
    async with LocalEngine(config) as engine:
        for round_ in range(runs):
            # each round starts with a different model: load drifts alike over all
            order = models[round_ % len(models) :] + models[: round_ % len(models)]
            for model in order:
                qemu.TCG_CPU, _, cache = model.partition("@")
                qemu.ENGINE_DISK_CACHE = cache or "writeback"
                took = await one_round(engine, sample, archive if load else None)
                for case, seconds in took.items():
                    samples[model].setdefault(case, []).append(seconds)
                print(f"round {round_} {model}: {json.dumps(took)}", file=sys.stderr, flush=True)
    medians = {
        model: {case: statistics.median(values) for case, values in cases.items()}
        for model, cases in samples.items()
    }
    return {"medians": medians, "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--mib", type=int, default=170, help="size of the hashed file")
    parser.add_argument("--load", action="store_true", help="also time docker load")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.conftest import microvm_image

    image = microvm_image()
    with tempfile.TemporaryDirectory(prefix="golem-bench-") as state_dir:
        report = asyncio.run(
            run_all(options.models, options.runs, options.mib, options.load, state_dir, image)
        )
    report["machine"] = {"cpus": os.cpu_count(), "load": os.getloadavg()}
    report["runs"] = options.runs
    if options.json:
        print(json.dumps(report, indent=2))
        return
    reference = options.models[0]
    medians = report["medians"]
    print(f"microVM guests under TCG by CPU model: medians of {options.runs} runs, seconds")
    print(f"{'case':<20}" + "".join(f"{model[:26]:>28}" for model in medians))
    for case in medians[reference]:
        cells = [
            f"{medians[model][case]:8.1f} ({medians[model][case] / medians[reference][case]:.2f}x)"
            for model in medians
        ]
        print(f"{case:<20}" + "".join(f"{cell:>28}" for cell in cells))


if __name__ == "__main__":
    main()
