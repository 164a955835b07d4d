"""Attacker suite, box -> host, through the files API: ``get_dir`` of a box directory that
holds a ``.git`` (directory or file), a symlink out of the tree or into .git, a setuid,
setgid or sticky file, or a FIFO, on this machine's engine (bubblewrap, dockerd, Podman)
and through a real `golem serve` with RemoteBox; and a huge sparse file fetched through
the server, which must hold neither it nor the client's process in memory.

Each attempt must fail: nothing of the kind lands beneath the destination (no .git, no
special file or mode, no link that resolves outside it), and the call raises
``UnsafeBoxOutput`` naming the rule.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from golem.core import GolemConfig, GolemError, UnsafeBoxOutput
from golem.sandbox import Engine, ExecRequest, RemoteEngine
from tests.attacks.takeback_harness import (
    host_destination,
    links_leaving,
    listing,
    peak_memory_growth,
    rule_of,
    special_files,
)
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP, backend_toml
from tests.service.served import Served, launch

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]

MEMORY_BOUND = 200 * 1024 * 1024


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every attack runs on bubblewrap, dockerd and Podman."""
    return str(request.param)


# Each case: what the box makes in /workspace/case, and the rule that refuses it.
CASES = {
    "git-directory": ("git init -q case/repo && echo x > case/repo/f", "takeback.git"),
    "git-file": ("mkdir -p case/s && echo 'gitdir: ../elsewhere' > case/s/.git", "takeback.git"),
    "absolute-symlink": ("mkdir case && ln -s /etc/passwd case/passwd", "takeback.link"),
    "symlink-above-the-tree": ("mkdir -p case/a && ln -s ../../x case/a/up", "takeback.link"),
    "symlink-into-git": ("mkdir case && ln -s repo/.git/config case/cfg", "takeback.link"),
    "setuid-file": ("mkdir case && cp /bin/sh case/sh && chmod 4755 case/sh", "takeback.mode"),
    "setgid-file": ("mkdir case && cp /bin/sh case/sh && chmod 2755 case/sh", "takeback.mode"),
    "sticky-file": ("mkdir case && echo x > case/f && chmod 1644 case/f", "takeback.mode"),
    "fifo": ("mkdir case && mkfifo case/pipe", "takeback.kind"),
    # Links that each stay inside when read as text, but lead out through one another:
    # with b -> ., up -> b/.. is the tree's parent and upup -> up/.. its grandparent.
    "symlink-chain-out": (
        "mkdir case && ln -s . case/b && ln -s b/.. case/up && ln -s up/.. case/upup",
        "takeback.link",
    ),
}  # fmt: skip


def assert_nothing_unsafe_landed(destination: Path) -> None:
    """No .git, special file or mode, and no link leaving ``destination``."""
    if not destination.exists():
        return
    assert special_files(destination) == []
    assert links_leaving(destination) == []
    assert [p for p in destination.rglob("*") if p.name.casefold() == ".git"] == []


@pytest.mark.parametrize("case", list(CASES))
async def test_get_dir_refuses_git_links_out_and_special_files(
    case: str, engine: Engine, tmp_path: Path
) -> None:
    command, rule = CASES[case]
    async with engine.session() as box:
        made = await box.execute(f"set -e; {command}")
        assert made.exit_code == 0, made.stderr_text
        destination = tmp_path / "landed"
        with pytest.raises(UnsafeBoxOutput) as got:
            await box.get_dir("case", destination)
    assert got.value.rule == rule, str(got.value)
    assert f"(rule {rule}; see docs/security.md)" in str(got.value)
    assert_nothing_unsafe_landed(destination)


# Through a real server ------------------------------------------------------------------


class Servers:
    """One `golem serve` per backend, started when first asked for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.running: dict[str, Served] = {}

    def of(self, backend: str) -> Served:
        if backend not in self.running:
            state = self.root / backend / "state"
            self.running[backend] = launch(state, config=backend_toml(backend))
        return self.running[backend]

    def stop(self) -> None:
        for served in self.running.values():
            served.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    running = Servers(tmp_path_factory.mktemp("served"))
    yield running
    running.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def remote_engine(
    backend: str, config: GolemConfig, servers: Servers
) -> AsyncIterator[RemoteEngine]:
    served = servers.of(backend)
    async with RemoteEngine(served.url, served.key("attacker"), config=config) as remote:
        yield remote


REMOTE_CASES = ["git-directory", "git-file", "symlink-above-the-tree", "setuid-file"]


@pytest.mark.parametrize("case", REMOTE_CASES)
async def test_get_dir_through_golem_serve_refuses_what_a_local_one_does(
    case: str, remote_engine: RemoteEngine, tmp_path: Path
) -> None:
    command, rule = CASES[case]
    async with remote_engine.session() as box:
        made = await box.execute(f"set -e; {command}")
        assert made.exit_code == 0, made.stderr_text
        destination = tmp_path / "landed"
        with pytest.raises(UnsafeBoxOutput) as got:
            await box.get_dir("case", destination)
    assert got.value.rule == rule, str(got.value)
    assert_nothing_unsafe_landed(destination)


REFUSED_AFTER_ACCEPTED = (
    "mkdir case && cd case && echo box > README.md && mkdir src && echo new > src/new.py && "
    "mkdir -p aaa-repo/objects aaa-repo/refs && echo 'ref: refs/heads/main' > aaa-repo/HEAD && "
    "mkdir -p zzz/.git && echo x > zzz/.git/config"
)
"""A directory whose entries the host would take, then a bare repository and a .git."""


async def test_get_dir_through_golem_serve_refused_at_its_last_entry_changes_nothing(
    remote_engine: RemoteEngine, tmp_path: Path
) -> None:
    destination = host_destination(tmp_path / "landed")
    before = listing(destination)
    async with remote_engine.session() as box:
        made = await box.execute(f"set -e; {REFUSED_AFTER_ACCEPTED}")
        assert made.exit_code == 0, made.stderr_text
        with pytest.raises(UnsafeBoxOutput) as got:
            await box.get_dir("case", destination)
    assert got.value.rule == "takeback.git", str(got.value)
    assert listing(destination) == before


def _peak_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert found is not None
    return int(found.group(1)) * 1024


@pytest.mark.parametrize("backend", ["process"])
async def test_a_huge_sparse_dir_through_golem_serve_balloons_neither_server_nor_client(
    remote_engine: RemoteEngine, servers: Servers, tmp_path: Path
) -> None:
    server = servers.running["process"].process.pid
    spec = remote_engine.spec(max_takeback_bytes="1g")
    async with remote_engine.session(spec) as box:
        await box.execute("mkdir d && truncate -s 50G d/huge.bin")
        Path(f"/proc/{server}/clear_refs").write_text("5")
        server_before = _peak_of(server)
        with peak_memory_growth() as growth, pytest.raises(UnsafeBoxOutput) as got:
            await box.get_dir("d", tmp_path / "d")
        server_growth = _peak_of(server) - server_before
    assert got.value.rule == "takeback.size"
    assert not (tmp_path / "d" / "huge.bin").exists()
    assert growth[0] < MEMORY_BOUND, f"the client grew by {growth[0] >> 20} MiB"
    assert server_growth < MEMORY_BOUND, f"the server grew by {server_growth >> 20} MiB"


async def test_a_file_over_max_file_bytes_through_golem_serve_is_refused_naming_the_rule(
    remote_engine: RemoteEngine, tmp_path: Path
) -> None:
    async with remote_engine.session(remote_engine.spec(max_file_bytes="1m")) as box:
        await box.execute("head -c 3000000 /dev/zero > big")
        with pytest.raises(GolemError) as by_get:
            await box.get_file("big")
        with pytest.raises(GolemError) as by_copy:
            await box.get_file_to("big", tmp_path / "big")
        with pytest.raises(GolemError) as by_return:
            await box.execute(ExecRequest(cmd=["true"], return_files=["big"]))
    said = [str(refused) for refused in (by_get.value, by_copy.value, by_return.value)]
    assert [rule_of(text) for text in said] == ["takeback.size"] * 3, said
