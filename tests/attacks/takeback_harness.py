"""Helpers of the box -> host attacker suite (tests/attacks/test_box_to_host*.py): scripted
attackers for runs, markers the host would create if it ran an attacker's command, the
host process's peak memory, and hand-made tar streams.

Every attacker command here writes a marker file in a host directory that no box can see
(the boxes have /tmp of their own): the marker exists only if the host ran the command.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.events import NodeStarted, RunEvent
from golem.core import EventSink, GolemConfig
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine
from golem.store import SqlStore
from tests.blueprint.repos import EXAMPLES, git
from tests.conftest import backend_toml

FIX_CALCULATOR = "sed -i 's/return a - b/return a + b/' calculator.py"
"""The change that makes examples/calculator's tests pass (so a run that lands it ships)."""

RULE_TEXT = re.compile(r"\(rule (takeback\.[a-z-]+); see docs/security\.md\)")


@dataclass(frozen=True)
class Markers:
    """A host directory where an attacker's command, run on the host, leaves a file."""

    directory: Path

    def touch(self, name: str) -> str:
        """A shell command that leaves the marker ``name``."""
        return f"touch {self.directory / name}"

    def left(self) -> list[str]:
        """The markers some host process left."""
        return sorted(path.name for path in self.directory.iterdir())


def make_markers(parent: Path) -> Markers:
    """A fresh marker directory under ``parent`` (a host path no box sees)."""
    directory = parent / "markers"
    directory.mkdir()
    return Markers(directory)


def scripted(directory: Path, *commands: str, summary: str = "done") -> str:
    """A scripted model (``scripted:PATH``) that runs each command with the bash tool,
    then finishes."""
    turns = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command, "timeout": 300}}]}
        for command in commands
    ]
    turns.append({"tool_calls": [{"name": "finish", "arguments": {"summary": summary}}]})
    path = directory / f"attacker-{len(list(directory.glob('attacker-*')))}.yaml"
    path.write_text(json.dumps({"turns": turns}))  # JSON is YAML
    return f"scripted:{path}"


def minion_with_box(directory: Path, **box: object) -> str:
    """The built-in minion blueprint with ``box`` settings (limits of the run's box)."""
    source = (Path(__file__).parents[2] / "src/golem/blueprint/builtin/minion.yaml").read_text()
    path = directory / "minion-limited.yaml"
    path.write_text(source.replace("nodes:", f"box: {json.dumps(box)}\nnodes:", 1))
    return str(path)


async def run_attack(
    config: GolemConfig,
    engine: Engine,
    remote: Path,
    model: str,
    *,
    on_event: EventSink[RunEvent] | None = None,
    blueprint: str = "minion",
) -> tuple[RunState, list[PullRequest]]:
    """One `golem run` of ``blueprint`` against the bare repository ``remote``, with the
    scripted ``model``; the finished state and the pull requests the local forge keeps."""
    store = await SqlStore.open(config)
    try:
        runner = Runner(config, engine=engine, store=store, on_event=on_event)
        request = RunRequest(
            repo=str(remote), task="Fix the calculator", model=model, blueprint=blueprint
        )
        return await runner.start(request), await LocalForge(store).pull_requests()
    finally:
        await store.close()


@dataclass
class HostGit:
    """The host checkout's own git metadata (config, hooks) as a run's agent step began,
    to compare with what it holds after the box's changes came back."""

    state_dir: Path
    config: bytes | None = None
    hooks: list[str] | None = None

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, NodeStarted) and event.node == "implement" and self.config is None:
            git_dir = self.state_dir / "runs" / event.run_id / "repo" / ".git"
            self.config = (git_dir / "config").read_bytes()
            self.hooks = sorted(path.name for path in (git_dir / "hooks").iterdir())

    def assert_untouched(self, checkout: Path) -> None:
        """The checkout's .git config and hooks are as they were before the box worked."""
        assert self.config is not None, "the run never reached its agent step"
        assert (checkout / ".git" / "config").read_bytes() == self.config
        hooks = sorted(path.name for path in (checkout / ".git" / "hooks").iterdir())
        assert hooks == self.hooks
        assert all(name.endswith(".sample") for name in hooks)


def user_git_everywhere(checkout: Path) -> None:
    """What a person does in a checkout afterwards, with the host's own git config: git
    status, diff and log in every directory of it (a hook, fsmonitor, filter, diff
    driver or nested repository the box left would run now)."""
    for directory, subdirectories, _ in os.walk(checkout):
        subdirectories[:] = [name for name in subdirectories if name != ".git"]
        for args in (["status"], ["diff", "HEAD"], ["log", "-p", "-1"]):
            subprocess.run(
                ["git", *args], cwd=directory, capture_output=True, check=False, timeout=60
            )


def git_dirs_below(root: Path) -> list[str]:
    """Directories under ``root`` that the host's git takes as a repository of their own
    (not the one at ``root``, if any): a nested or bare repository that came from a box."""
    top = root.resolve()
    own = top / ".git"
    found = []
    for directory, subdirectories, _ in os.walk(root):
        subdirectories[:] = [name for name in subdirectories if name != ".git"]
        done = subprocess.run(
            ["git", "rev-parse", "--absolute-git-dir"], cwd=directory, capture_output=True,
            text=True, check=False, timeout=60,
        )  # fmt: skip
        found_dir = Path(done.stdout.strip())
        if done.returncode == 0 and found_dir != own and top in found_dir.parents:
            found.append(Path(directory).relative_to(root).as_posix())
    return found


def rule_of(text: str | None) -> str | None:
    """The takeback rule an error message names, if it names one."""
    found = RULE_TEXT.search(text or "")
    return found.group(1) if found else None


def special_files(root: Path) -> list[str]:
    """Paths under ``root`` that are no plain file, directory or symlink, or carry a
    setuid, setgid or sticky bit (symlinks not followed)."""
    found = []
    for directory, subdirectories, names in os.walk(root):
        for name in [*subdirectories, *names]:
            path = Path(directory) / name
            mode = path.lstat().st_mode
            odd = not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))
            if odd or (not stat.S_ISDIR(mode) and mode & 0o7000):
                found.append(path.relative_to(root).as_posix())
    return found


def links_leaving(root: Path) -> list[str]:
    """Symlinks under ``root`` whose target, resolved on this host, is outside ``root``."""
    top = root.resolve()
    found = []
    for directory, subdirectories, names in os.walk(root):
        for name in [*subdirectories, *names]:
            path = Path(directory) / name
            if path.is_symlink():
                real = path.resolve()
                if real != top and top not in real.parents:
                    found.append(path.relative_to(root).as_posix())
    return found


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every file's bytes and every symlink's target under ``root`` (not followed)."""
    found: dict[str, bytes | str] = {}
    for directory, subdirectories, names in os.walk(root):
        for name in [*subdirectories, *names]:
            path = Path(directory) / name
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[key] = "-> " + os.readlink(path)
            elif path.is_file():
                found[key] = path.read_bytes()
    return found


def listing(root: Path) -> dict[str, tuple[object, ...]]:
    """Everything under ``root`` (its .git too), not following a link: each directory with
    its mode, each file with its mode and bytes, each symlink with its target; what a
    destination left "exactly as it was" must still hold."""
    found: dict[str, tuple[object, ...]] = {}
    for directory, subdirectories, names in os.walk(root):
        for name in [*subdirectories, *names]:
            path = Path(directory) / name
            key = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                found[key] = ("dir", mode & 0o7777)
            elif stat.S_ISREG(mode):
                found[key] = ("file", mode & 0o7777, path.read_bytes())
            else:
                found[key] = ("special", mode)
    return found


def allocated(path: Path) -> int:
    """The bytes of disk a file takes (its blocks), not its apparent size."""
    return path.stat().st_blocks * 512


def host_destination(root: Path) -> Path:
    """A destination that already holds files, a directory, a link out of it (the host's
    own) and the makings of a git directory (objects/ and refs/, no HEAD)."""
    root.mkdir()
    (root / "README.md").write_text("the host's readme\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('host')\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("guide\n")
    (root / "old.txt").write_text("old\n")
    (root / "shared").symlink_to("../outside")
    (root / "cache" / "objects" / "info").mkdir(parents=True)
    (root / "cache" / "objects" / "info" / "packs").write_text("")
    (root / "cache" / "refs" / "heads").mkdir(parents=True)
    return root


def make_project(parent: Path, *, repository: bool = True) -> Path:
    """A user's directory: examples/calculator (a git repository with one commit)."""
    target = parent / "project"
    shutil.copytree(EXAMPLES / "calculator", target)
    if repository:
        git("init", "-q", "-b", "main", cwd=target)
        git("add", "-A", cwd=target)
        git("commit", "-q", "-m", "seed", cwd=target)
    return target


def golem_agent(
    backend: str,
    tmp_path: Path,
    project: Path,
    *commands: str,
    flags: tuple[str, ...] = (),
    temporary: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`golem agent` on ``project`` (with ``flags``) and an agent that runs ``commands`` in
    the box. Its temporary directory is ``temporary`` (default ``tmp_path / "tmp"``; see
    ``temporary_left``)."""
    config = tmp_path / "golem.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\n' + backend_toml(backend))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "cfg")
    temporary = temporary or tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    env["TMPDIR"] = str(temporary)
    model = scripted(tmp_path, *commands)
    argv = ["agent", "--model", model, "--workspace", str(project), "--config", str(config)]
    argv += flags
    return subprocess.run(
        [sys.executable, "-m", "golem", *argv, "Change the project"],
        capture_output=True, text=True, errors="replace", env=env, timeout=300, check=False,
    )  # fmt: skip


def temporary_left(temporary: Path) -> list[str]:
    """What a `golem agent` run by ``golem_agent`` left in its temporary directory (give
    ``tmp_path`` for the default one)."""
    if temporary.name != "tmp":
        temporary = temporary / "tmp"
    return sorted(path.name for path in temporary.iterdir())


# Host memory ---------------------------------------------------------------------------


def _peak_rss() -> int:
    status = Path("/proc/self/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert found is not None, status
    return int(found.group(1)) * 1024


@contextlib.contextmanager
def peak_memory_growth() -> Iterator[list[int]]:
    """How far this process's peak resident memory rose above where it stood on entry:
    the list holds one number once the block ends. The kernel's peak is reset on entry
    (/proc/self/clear_refs), so an earlier peak cannot hide this one."""
    Path("/proc/self/clear_refs").write_text("5")
    start = _peak_rss()
    growth: list[int] = []
    try:
        yield growth
    finally:
        growth.append(_peak_rss() - start)


# Hand-made tar streams -------------------------------------------------------------------


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """A tar archive of ``members`` (each with its data, for regular files)."""
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w", format=fmt) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return sink.getvalue()


def entry(name: str, kind: bytes = tarfile.REGTYPE, *, data: bytes = b"", mode: int = 0o644,
          link: str = "") -> tuple[tarfile.TarInfo, bytes | None]:  # fmt: skip
    """One member of a hand-made archive."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.linkname = link
    if kind in (tarfile.REGTYPE, tarfile.AREGTYPE):
        info.size = len(data)
        return info, data
    return info, None


def raw_header(name: bytes, size: int, kind: bytes) -> bytes:
    """A bare ustar header block claiming ``size`` bytes of ``kind`` (no data follows
    unless the caller adds it): how a hostile box claims any size it likes."""
    block = bytearray(512)
    block[0 : len(name)] = name
    block[100:108] = b"0000644\0"
    block[108:116] = b"0001750\0"
    block[116:124] = b"0001750\0"
    if size < 8**11:
        block[124:136] = f"{size:011o}\0".encode()
    else:  # base-256, as GNU tar writes sizes past 8 GiB
        block[124:136] = bytes([0x80]) + size.to_bytes(11, "big")
    block[136:148] = b"00000000000\0"
    block[156:157] = kind
    block[257:263] = b"ustar\0"
    block[263:265] = b"00"
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


async def stream_of(data: bytes, chunk: int = 64 * 1024) -> AsyncIterator[bytes]:
    """``data`` in chunks, as a box's transfer arrives."""
    for start in range(0, len(data), chunk):
        yield data[start : start + chunk]


__all__ = [
    "EXAMPLES",
    "FIX_CALCULATOR",
    "HostGit",
    "Markers",
    "allocated",
    "entry",
    "git_dirs_below",
    "golem_agent",
    "host_destination",
    "links_leaving",
    "listing",
    "make_markers",
    "make_project",
    "minion_with_box",
    "peak_memory_growth",
    "raw_header",
    "rule_of",
    "run_attack",
    "scripted",
    "snapshot",
    "special_files",
    "stream_of",
    "tar_of",
    "temporary_left",
    "user_git_everywhere",
]
