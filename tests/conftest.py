"""Shared fixtures: a real engine on a temporary state directory, real bubblewrap boxes.

Tests marked ``bwrap`` (or ``docker``, ``podman``, ``gvisor``, ``microvm``, ``postgres``)
skip locally when the machine lacks the tool (``microvm``: when a guest does not boot, tried
once by booting one, with why); under CI (``CI`` set) such a skip is turned into a failure,
so CI can never pass by skipping.

microVM boxes boot in seconds under TCG: their tests share one engine (and so its warm pool)
for the whole session. A module whose tests run on ``microvm`` puts ``SHARED_LOOP`` in its
``pytestmark``, so that its tests and async fixtures run on the session's event loop, the
loop that engine lives on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import gc
import json
import os
import pwd
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import psycopg
import pytest
import pytest_asyncio
from psycopg import sql
from sqlalchemy.engine import make_url

from golem.core import GolemConfig, load_config
from golem.core.config import MicroVMBackendConfig, default_state_dir
from golem.core.errors import GolemError
from golem.sandbox import Box, Engine, LocalEngine
from golem.sandbox.backends.docker.reach import unix_refusal
from golem.sandbox.backends.microvm import MicroVMBackend
from golem.sandbox.images import bootstrap
from tests.sandbox.nethosts import NetHosts, start_test_network

TESTS = Path(__file__).parent
ENFORCED_MARKERS = ("bwrap", "docker", "podman", "gvisor", "microvm", "postgres")
PRIVATE_PASSWORD = "pw-" + secrets.token_hex(8)
PODMAN_SOCKET = "unix:///run/podman/podman.sock"
ENGINES = {"docker": None, "podman": PODMAN_SOCKET}  # backend name -> engine socket
POSTGRES_URL = os.environ.get(
    "GOLEM_TEST_POSTGRES_URL", "postgresql+psycopg://golem:golem@127.0.0.1:55432/golem_test"
)
"""A PostgreSQL database whose role may create databases: scripts/check exports it after
scripts/ensure-postgres; without it, the cluster that script starts."""


BOTH_BACKENDS = [
    pytest.param("process", marks=pytest.mark.bwrap),
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("podman", marks=pytest.mark.podman),
    pytest.param("gvisor", marks=pytest.mark.gvisor),
    pytest.param("microvm", marks=pytest.mark.microvm),
]
"""Backends a module's ``backend`` fixture can be parametrized over: bubblewrap, the
docker backend on dockerd, the same backend on Podman's Docker-compatible socket, gVisor
(runsc started by golem) and QEMU microVMs (a module with ``microvm`` puts ``SHARED_LOOP``
in its ``pytestmark``)."""

SHARED_LOOP = pytest.mark.asyncio(loop_scope="session")
"""Runs a module's async tests on the session's event loop (where the shared microVM
engine lives); its own async fixtures then say ``loop_scope="session"`` too, and a sync
test of it ``SYNC_ON_SHARED_LOOP``."""
SYNC_ON_SHARED_LOOP = pytest.mark.filterwarnings(
    "ignore:The test <Function .* is marked with '@pytest.mark.asyncio' but it is not an async"
)
"""A sync test in a ``SHARED_LOOP`` module (the module's mark is for its async tests)."""
WITH_HOST_NETWORK = [p for p in BOTH_BACKENDS if p.values[0] != "microvm"]
"""Backends that give a box the host's network when asked (a microVM never has it)."""
WITH_HOST_DIRECTORY = [p for p in BOTH_BACKENDS if p.values[0] != "microvm"]
"""Backends that bind a host directory as a box's /workspace (a microVM never does)."""
QUICK_START_BACKENDS = [p for p in BOTH_BACKENDS if p.values[0] != "microvm"]
"""Backends whose boxes start in well under a second: for tests that start many boxes, or
a golem process of their own, to prove a property of the engine's or a command's own, the
same on every backend (a microVM boots in seconds under TCG, and a new process cannot share
the session's booted guests)."""
HOST_SEES_BOX_PROCESSES = [p for p in BOTH_BACKENDS if p.values[0] != "microvm"]
"""Backends whose boxes' processes are this host's processes (a microVM's are its guest
kernel's): for tests that look at them from the host."""


def engine_api(backend: str) -> docker.APIClient:
    """A client for the engine behind a container backend (docker or podman)."""
    return docker.APIClient(base_url=ENGINES[backend], version="auto", timeout=30)


@functools.cache
def engine_reachable(backend: str) -> bool:
    if unix_refusal(ENGINES[backend]) is not None:
        return False  # the Docker SDK would leave its socket open (a ResourceWarning later)
    try:
        with engine_api(backend) as api:
            api.ping()
    except docker.errors.DockerException:
        return False
    return True


def _libpq(url: str) -> str:
    """A SQLAlchemy URL as libpq's connection string."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@functools.cache
def postgres_reachable() -> bool:
    try:
        with psycopg.connect(_libpq(POSTGRES_URL), connect_timeout=5):
            pass
    except psycopg.Error:
        return False
    return True


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
        item.add_marker(pytest.mark.xdist_group(worker_group(item)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (golem, its libraries, every test module) lives as long as
    the worker: it is moved out of the collector's way, whose passes then scan only what the
    tests make (about an eighth of an in-process module's CPU)."""
    gc.collect()
    gc.freeze()


def worker_group(item: pytest.Item) -> str:
    """The tests that run on one worker under ``--dist loadgroup`` (scripts/check): a
    module's together (its module-scoped servers and boxes start once), every microvm test
    together (one worker boots the session's guests) and every Ray test together (one
    cluster on the machine)."""
    if item.get_closest_marker("microvm"):
        return "microvm"
    module = item.path.relative_to(TESTS.parent).as_posix()
    if module.startswith("tests/cluster/"):
        return "ray"
    return module


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("bwrap") and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (scripts/setup installs it)")
    if item.get_closest_marker("docker") and not engine_reachable("docker"):
        pytest.skip("no container engine answers (scripts/ensure-dockerd starts dockerd)")
    if item.get_closest_marker("gvisor") and shutil.which("runsc") is None:
        pytest.skip("runsc is not installed (scripts/setup installs it)")
    if item.get_closest_marker("podman") and not engine_reachable("podman"):
        pytest.skip("podman's socket does not answer (scripts/ensure-podman starts it)")
    if item.get_closest_marker("microvm") and (refusal := microvm_refusal()) is not None:
        pytest.skip(refusal)
    if item.get_closest_marker("postgres") and not postgres_reachable():
        pytest.skip("no PostgreSQL answers at GOLEM_TEST_POSTGRES_URL (scripts/ensure-postgres)")


@functools.cache
def microvm_refusal() -> str | None:
    """Why this host cannot run microVMs, decided once by booting a guest (None: it can)."""
    if shutil.which("qemu-system-x86_64") is None:
        return "QEMU is not installed (scripts/setup installs qemu-system-x86)"
    try:
        microvm_accel()
    except GolemError as exc:
        return f"this host cannot run microVMs: {exc.message}"
    return None


@functools.cache
def microvm_accel() -> str:
    """The accelerator a guest boots under on this host (kvm, or tcg where KVM guests do not
    boot), decided once by booting one; GolemError when none boots."""
    backend = MicroVMBackend(MicroVMBackendConfig())
    with concurrent.futures.ThreadPoolExecutor(1) as thread:  # off any running loop
        return thread.submit(asyncio.run, backend.boot_check()).result()


def kill_box_from_outside(state: dict[str, Any]) -> None:
    """Kill a box behind golem's back: its bubblewrap, its container, or every process of
    its gVisor sandbox."""
    if "container" in state:
        with docker.APIClient(base_url=state["docker_host"], version="auto") as api:
            api.kill(state["container"])
    elif "runsc" in state:
        # a controller's directory may be gone (runsc drops those it does not use): the
        # sandbox's processes are in the others
        procs = [Path(d, "cgroup.procs") for d in state["cgroup_dirs"]]
        present = [p for p in procs if p.exists()]
        assert present, f"none of the box's cgroups is left: {procs}"
        for listing in present:
            with contextlib.suppress(FileNotFoundError):
                for pid in listing.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
    else:
        os.killpg(state["pid"], signal.SIGKILL)


@pytest.fixture
def golem_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `golem` process with its own state directory under
    ``tmp_path`` and no configuration files."""
    from tests.cli.invoke import clean_env

    return clean_env(tmp_path / "state", tmp_path / "cfg")


@pytest.fixture
def backend() -> str:
    """The backend a test runs on; modules that test both override this fixture."""
    return "process"


@functools.cache
def devbox_image(backend: str) -> str:
    """golem's devbox image in an engine, bootstrapped from Debian's packages once (and
    skipped by content hash when the engine has it already)."""
    with engine_api(backend) as api:
        built = asyncio.run(bootstrap("devbox", api=api))
    assert built.tag is not None
    return built.tag


@functools.cache
def microvm_image() -> str:
    """golem's devbox root file system, bootstrapped from Debian's packages once (where
    `golem image bootstrap` keeps it; skipped by content hash when it is there)."""
    built = asyncio.run(bootstrap("devbox", images_dir=default_state_dir() / "images"))
    assert built.rootfs is not None
    return str(built.rootfs)


def backend_settings(backend: str) -> dict[str, object] | None:
    """``[engine.backend]`` of a test on ``backend`` (None: the default, process)."""
    if backend in ENGINES:
        return {"type": "docker", "image": devbox_image(backend), "docker_host": ENGINES[backend]}
    if backend == "gvisor":
        return {"type": "gvisor"}
    if backend == "microvm":
        return {"type": "microvm", "image": microvm_image()}
    return None


def backend_toml(backend: str) -> str:
    """``[engine.backend]`` of a test on ``backend`` as golem.toml holds it ("" for process)."""
    settings = backend_settings(backend)
    if settings is None:
        return ""
    lines = [f"{name} = {json.dumps(value)}" for name, value in settings.items() if value]
    return "[engine.backend]\n" + "".join(f"{line}\n" for line in lines)


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The devbox image in dockerd."""
    return devbox_image("docker")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    enforced = any(item.get_closest_marker(m) for m in ENFORCED_MARKERS)
    if report.skipped and enforced and os.environ.get("CI"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {report.longrepr}"
    return report


@pytest.fixture
def config(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> GolemConfig:
    """Default configuration with a private state directory and no config files."""
    overrides: dict[str, object] = {"state_dir": str(tmp_path / "state")}
    engine: dict[str, object] = {}
    settings = backend_settings(backend)
    if settings is not None:
        engine["backend"] = settings
    if backend in SLOW_START_BACKENDS:
        engine["pool"] = {"snapshot_boxes": 0}
    if engine:
        overrides["engine"] = engine
    return load_config(overrides, files=[])


SLOW_START_BACKENDS = ("gvisor", "microvm")
"""Backends whose tests keep no warm boxes from snapshots (the engine's, tested on process
and docker): each session from a snapshot would start another sandbox or guest in the
background, which closing the engine waits for."""


def _on_shared_loop(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker("asyncio")
    return marker is not None and marker.kwargs.get("loop_scope") == "session"


@pytest.fixture
def engine(request: pytest.FixtureRequest, backend: str) -> Engine:
    """A real engine; every box it made is gone after the test (microvm: the session's
    shared engine, whose boxes are wiped back into its pool, unless the test is marked
    ``own_engine``: one that closes its engine, or counts every box of it)."""
    shared_loop = _on_shared_loop(request)
    own = request.node.get_closest_marker("own_engine") is not None
    if backend == "microvm" and shared_loop and not own:
        engines: SharedEngines = request.getfixturevalue("reaped_microvm_engines")
        return engines.of(request.getfixturevalue("config"))
    name = "own_engine_on_shared_loop" if shared_loop else "own_engine"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


@pytest.fixture
async def own_engine(config: GolemConfig) -> AsyncIterator[Engine]:
    """An engine of this test's own."""
    async with LocalEngine(config) as engine:
        yield engine


@pytest_asyncio.fixture(loop_scope="session")
async def own_engine_on_shared_loop(config: GolemConfig) -> AsyncIterator[Engine]:
    """An engine of this test's own, on the session's loop."""
    async with LocalEngine(config) as engine:
        yield engine


class SharedEngines:
    """The session's microvm engines, one per configuration (its state directory aside):
    booted guests are shared through each engine's warm pool."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.engines: dict[str, LocalEngine] = {}

    def of(self, config: GolemConfig) -> LocalEngine:
        """The shared engine of ``config``'s settings."""
        key = config.model_dump_json(exclude={"state_dir"})
        if key not in self.engines:
            state = self.state_dir / f"engine-{len(self.engines)}"
            pool = config.engine.pool.model_copy(update=SHARED_POOL)
            engine = config.engine.model_copy(update={"pool": pool})
            shared = config.model_copy(update={"state_dir": state, "engine": engine})
            self.engines[key] = LocalEngine(shared)
        return self.engines[key]


SHARED_POOL = {"clean": 1, "strategy": "fast", "max_idle": 60.0}
"""One wiped guest kept per box shape, stopped after a minute unused (a module's tests use
one shape after another): a guest holds hundreds of MiB of the host's memory."""


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def microvm_engines(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SharedEngines]:
    """Every microvm test's engine, by configuration."""
    await asyncio.to_thread(microvm_image)  # bootstraps on a loop of its own
    shared = SharedEngines(tmp_path_factory.mktemp("microvm-state"))
    yield shared
    for engine in shared.engines.values():
        await engine.close()


@pytest_asyncio.fixture(loop_scope="session")
async def reaped_microvm_engines(microvm_engines: SharedEngines) -> SharedEngines:
    """The shared engines, their guests idle past the pool's ``max_idle`` stopped."""
    for engine in microvm_engines.engines.values():
        await engine.reap()
    return microvm_engines


CONTAINERS_BOOT_TIMEOUT = 540.0
"""Seconds the containers box may take to boot and have its engine answer: a minute at
rest under TCG, several on a host as loaded as CI's; its first test waits as long
(``CONTAINERS_TIMEOUT``)."""
CONTAINERS_TIMEOUT = pytest.mark.timeout(CONTAINERS_BOOT_TIMEOUT + 60)
"""The mark of every test of the containers box."""
CONTAINERS_ALLOWED = r"^allowed\.test$"
"""What the containers box's egress policy allows (every other host is refused)."""


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def containers_box(
    microvm_engines: SharedEngines, net: NetHosts, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Box]:
    """The session's one microVM box with a private container engine (its guest boots once
    for every test of containers in a box): filtered network, the test hosts' DNS server,
    only ``allowed.test`` allowed (its address, 127.0.0.2, too), on their ports."""
    state = tmp_path_factory.mktemp("containers-state")
    network = {"nameservers": [net.dns.address], "upstream_ca": str(net.ca_file)}
    backend = {**(backend_settings("microvm") or {}), "boot_timeout": CONTAINERS_BOOT_TIMEOUT}
    config = load_config(
        {"state_dir": str(state), "engine": {"backend": backend, "network": network}}, files=[]
    )
    engine = microvm_engines.of(config)
    egress = {"allow": [CONTAINERS_ALLOWED], "allow_cidrs": ["127.0.0.2/32"], "ports": net.ports}
    spec = engine.spec(containers=True, network="filtered", egress=egress, pids=1024)
    async with engine.session(spec) as box:
        yield box


@pytest.fixture
def box(request: pytest.FixtureRequest, backend: str) -> Box:
    """A persistent box with default limits."""
    name = "box_on_shared_loop" if _on_shared_loop(request) else "own_box"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


@pytest.fixture
async def own_box(engine: Engine) -> AsyncIterator[Box]:
    """A box of the test's engine."""
    async with engine.session() as box:
        yield box


@pytest_asyncio.fixture(loop_scope="session")
async def box_on_shared_loop(engine: Engine) -> AsyncIterator[Box]:
    """A box of the test's engine, on the session's loop."""
    async with engine.session() as box:
        yield box


@pytest.fixture
def reachable_dir() -> Iterator[Path]:
    """A fresh directory that the unprivileged user running boxes can reach.

    pytest's tmp_path lives under a 0700 directory when we are root; boxes run bubblewrap
    as ``nobody`` then, which could not reach it.
    """
    directory = Path(tempfile.mkdtemp(prefix="golem-test-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def box_owned_dir(reachable_dir: Path) -> Path:
    """A host directory that boxes may write (owned by the run_as user when we are root)."""
    directory = reachable_dir / "workspace"
    directory.mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam("nobody")
        os.chown(directory, user.pw_uid, user.pw_gid)
    return directory


@pytest.fixture(scope="session")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetHosts]:
    """The network tests' own hosts (tests/sandbox/nethosts.py): HTTP and HTTPS servers, a
    DNS server, git repositories and a package index; /private/ needs PRIVATE_PASSWORD."""
    hosts = start_test_network(tmp_path_factory.mktemp("net"), private_password=PRIVATE_PASSWORD)
    yield next(hosts)
    next(hosts, None)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A SQLAlchemy URL of a new, empty PostgreSQL database of this test's own, dropped (with
    whatever connections are left) after it. A test using it is marked ``postgres``; one that
    asks for it by ``request.getfixturevalue`` must carry that marker itself."""
    with new_postgres_database() as url:
        yield url


@contextlib.contextmanager
def new_postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database's SQLAlchemy URL, dropped after the block."""
    name = f"golem_test_{secrets.token_hex(6)}"
    with psycopg.connect(_libpq(POSTGRES_URL), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        _drop_database(name)


def _drop_database(name: str) -> None:
    """Drop a test's database with whatever connections are left. A connection still
    starting up has no role yet, which only a superuser may end: no new one may start, and
    the drop is tried again until that one has started (or given up)."""
    with psycopg.connect(_libpq(POSTGRES_URL), autocommit=True) as admin:
        database = sql.Identifier(name)
        admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(database))
        for attempt in range(50):
            try:
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(database))
            except psycopg.errors.InsufficientPrivilege:
                if attempt == 49:
                    raise
                time.sleep(0.1)  # teardown only: a server-side start-up finishing
            else:
                return
