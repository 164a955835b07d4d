"""Every BoxSpec field's boundaries against the real backends: a value just inside makes a
working box, one just outside is a ConfigError before anything is made; a box whose creation
fails after it made something (cgroups, a record, a container) leaves nothing behind."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from golem.core import GolemConfig, load_config
from golem.core.errors import ConfigError, GolemError, InvalidRequest
from golem.core.spec import (
    MAX_ARG_STRLEN,
    MAX_CPUS,
    MAX_ENV_BYTES,
    MAX_LABEL_BYTES,
    MAX_PIDS,
    MAX_SIZE,
    MAX_TIMEOUT,
    MIN_CPUS,
    MIN_MEMORY,
    MIN_TMPFS,
    BoxSpec,
)
from golem.sandbox import LocalEngine
from golem.sandbox.backends.process.cgroups import ROOT
from golem.sandbox.models import ExecRequest
from golem.sandbox.records import BoxRecord, BoxRegistry
from tests.conftest import (
    ENGINES,
    QUICK_START_BACKENDS,
    backend_settings,
    engine_api,
)


@pytest.fixture(params=QUICK_START_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def config(tmp_path: Path, backend: str) -> GolemConfig:
    """No pool: every box this test makes is gone when its session ends."""
    overrides: dict[str, Any] = {
        "state_dir": str(tmp_path / "state"),
        "engine": {"pool": {"clean": 0, "dirty": 0}},
    }
    settings = backend_settings(backend)
    if settings is not None:
        overrides["engine"]["backend"] = settings
    return load_config(overrides, files=[])


def _entry(name: str, size: int) -> dict[str, str]:
    """An environment whose one ``NAME=value`` takes ``size`` bytes with its NUL."""
    return {name: "v" * (size - len(name) - 2)}


def _spread_env(total: int) -> dict[str, str]:
    """Variables of under MAX_ARG_STRLEN each taking ``total`` bytes in all."""
    env, left, index = {}, total, 0
    while left:
        size = min(left, MAX_ARG_STRLEN - 1024) if left - MAX_ARG_STRLEN + 1024 > 16 else left
        env.update(_entry(f"V{index:03d}", size))
        left, index = left - size, index + 1
    return env


INSIDE: list[tuple[str, Any]] = [
    ("cpus", MIN_CPUS),
    ("cpus", MAX_CPUS),
    ("memory", MAX_SIZE),
    ("pids", 8),
    ("pids", MAX_PIDS),
    ("tmp_size", MIN_TMPFS),
    ("tmp_size", MAX_SIZE),
    ("workspace_size", MAX_SIZE),
    ("user", "65534:65534"),
    ("env", _entry("BIG", MAX_ARG_STRLEN)),
    ("env", _spread_env(MAX_ENV_BYTES - len("HOME=/tmp/home") - 1)),
    ("timeout", MAX_TIMEOUT),
    ("idle_timeout", MAX_TIMEOUT),
    ("max_output_bytes", MAX_SIZE),
    ("labels", {"k": "v" * (MAX_LABEL_BYTES - 1)}),
    ("setup", "true" + " " * (MAX_ARG_STRLEN - 5)),
]

OUTSIDE: list[tuple[str, Any]] = [
    ("cpus", 0.001),
    ("cpus", MIN_CPUS * 0.99),
    ("cpus", MAX_CPUS + 1),
    ("memory", 0),
    ("memory", MIN_MEMORY - 1),
    ("memory", MAX_SIZE + 1),
    ("pids", 7),
    ("pids", MAX_PIDS + 1),
    ("tmp_size", MIN_TMPFS - 1),
    ("tmp_size", "9999999t"),
    ("workspace_size", MAX_SIZE + 1),
    ("user", "65535"),
    ("user", "4294967295:4294967295"),
    ("env", _entry("BIG", MAX_ARG_STRLEN + 1)),
    ("env", {"HUGE": "x" * 100 * 1024**2}),
    ("env", _spread_env(MAX_ENV_BYTES + 1)),
    ("secrets", _entry("TOKEN", MAX_ARG_STRLEN + 1)),
    ("timeout", MAX_TIMEOUT + 1),
    ("timeout", 1e300),
    ("idle_timeout", MAX_TIMEOUT * 2),
    ("max_output_bytes", MAX_SIZE + 1),
    ("max_file_bytes", 0),
    ("max_takeback_bytes", MAX_SIZE + 1),
    ("labels", {"k": "v" * MAX_LABEL_BYTES}),
    ("setup", "true" + " " * (MAX_ARG_STRLEN - 4)),
    ("image", ""),
    ("image", "devbox\0"),
    ("workdir", "a\0b"),
    ("workspace", "/tmp/a\0b"),
    ("workspace", "/" + "a" * 4096),
]


def _ident(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{len(text)}chars"


class RecordingRegistry(BoxRegistry):
    """The engine's own registry, remembering the id of every box record it makes."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir)
        self.made: list[str] = []

    def new_record(self, box_id: str, backend: str, **fields: Any) -> BoxRecord:
        self.made.append(box_id)
        return super().new_record(box_id, backend, **fields)


def _cgroups(box_id: str) -> list[Path]:
    """The box's cgroup directories, in any hierarchy."""
    patterns = ("golem/", "*/golem/", "*/*/golem/", "*/*/*/golem/")
    return [group for pattern in patterns for group in ROOT.glob(pattern + box_id)]


def _containers(backend: str, box_id: str) -> list[str]:
    """The box's containers, running or not."""
    if backend not in ENGINES:
        return []
    with engine_api(backend) as api:
        return [str(c["Id"]) for c in api.containers(all=True, filters={"name": box_id})]


@pytest.fixture
def leftovers(backend: str, engine: LocalEngine) -> Iterator[RecordingRegistry]:
    """After the test: no record, container or cgroup of a box the test made is left."""
    registry = RecordingRegistry(engine.registry.directory.parent)
    engine.registry = registry
    yield registry
    assert engine.registry.all() == []
    for box_id in registry.made:
        assert _cgroups(box_id) == [], box_id
        assert _containers(backend, box_id) == [], box_id


@pytest.mark.parametrize(("field", "value"), INSIDE, ids=[f"{f}={_ident(v)}" for f, v in INSIDE])
async def test_a_value_at_a_bound_makes_a_working_box(
    engine: LocalEngine, leftovers: RecordingRegistry, field: str, value: Any
) -> None:
    async with engine.session({field: value}) as box:
        result = await box.execute("echo ok")
        assert (result.exit_code, result.stdout) == (0, b"ok\n")
        if field == "env":
            sizes = await box.execute("env | wc -c")
            assert int(sizes.stdout) >= sum(len(n) + len(v) + 2 for n, v in value.items())


@pytest.mark.parametrize(("field", "value"), OUTSIDE, ids=[f"{f}={_ident(v)}" for f, v in OUTSIDE])
async def test_a_value_past_a_bound_is_refused_before_anything_is_made(
    engine: LocalEngine, leftovers: RecordingRegistry, field: str, value: Any
) -> None:
    with pytest.raises(ConfigError, match=field):
        await engine.create_session({field: value})
    assert leftovers.made == []


def _unchecked(engine: LocalEngine, **values: Any) -> BoxSpec:
    """The engine's defaults with ``values`` that no validation saw: what a backend must
    survive if a bound is ever missing or a kernel takes less than the spec allows."""
    return BoxSpec.model_construct(**{**engine.spec().model_dump(), **values})


@pytest.mark.parametrize(
    "values",
    [{"cpus": 0.001}, {"pids": 10**12}, {"tmp_size": 10**20}, {"memory": 1}],
    ids=["cpus", "pids", "tmp_size", "memory"],
)
async def test_a_value_a_backend_refuses_leaves_no_cgroup_record_or_container(
    engine: LocalEngine, leftovers: RecordingRegistry, values: dict[str, Any]
) -> None:
    refusal: GolemError | None = None
    try:
        async with engine.session(_unchecked(engine, **values)) as box:
            result = await box.execute("echo ok")
    except GolemError as error:
        refusal = error
    assert leftovers.made  # the spec went past validation to the backend
    if refusal is None:  # the backend took the value: then the box works
        assert (result.exit_code, result.stdout) == (0, b"ok\n")
    else:  # refused by the backend, past the spec, as an error of golem's
        assert not isinstance(refusal, ConfigError)


@pytest.mark.parametrize(
    "request_fields",
    [
        {"cmd": "echo ok", "env": {"BIG": "x" * MAX_ARG_STRLEN}},
        {"cmd": "echo ok", "env": _spread_env(MAX_ENV_BYTES + 1)},
        {"cmd": "echo " + "x" * 10 * 1024**2},
    ],
    ids=["env-entry", "env-total", "cmd"],
)
async def test_a_call_too_large_for_the_box_is_refused_and_the_box_lives(
    engine: LocalEngine, request_fields: dict[str, Any]
) -> None:
    async with engine.session() as box:
        with pytest.raises((ConfigError, InvalidRequest, ValidationError)):
            await box.execute(ExecRequest(**request_fields))
        result = await box.execute("echo alive")
        assert (result.exit_code, result.stdout) == (0, b"alive\n")


async def test_a_wait_past_the_time_bound_is_refused_not_left_hanging(engine: LocalEngine) -> None:
    async with engine.session() as box:
        process = await box.start("exec sleep 600")
        with pytest.raises(InvalidRequest, match="timeout"):
            # past threading.TIMEOUT_MAX in the box, whose wait then never answered
            await asyncio.wait_for(box.wait(process.id, 1e10), 60)
        assert await box.wait(process.id, MAX_TIMEOUT / 1e9) is None
