"""File transfer in and out of real boxes: binary safe, streamed, and safe on the host."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from golem.core import SandboxError
from golem.core.errors import BoxDiskFull, InvalidRequest, PathRefused
from golem.sandbox import Box, Engine
from golem.sandbox.files import chunks_of, tar_of
from tests.conftest import BOTH_BACKENDS, HOST_SEES_BOX_PROCESSES, SHARED_LOOP
from tests.sandbox.held_files import held_open

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on both backends unless it pins one."""
    return str(request.param)


ALL_BYTES = bytes(range(256)) * 4
READ_ONLY = ("Read-only file system", "Permission denied")
"""A write to the read-only root fails with EROFS; gVisor checks the file's permissions
first (EACCES for the box's user, as /usr is not its own)."""


async def test_put_and_get_file_are_binary_safe(box: Box) -> None:
    await box.put_file("data/blob.bin", ALL_BYTES, mode=0o600)
    assert await box.get_file("/workspace/data/blob.bin") == ALL_BYTES
    result = await box.execute("find data/blob.bin -printf '%m\\n'")
    assert result.stdout_text == "600\n"


async def test_a_file_mode_of_zero_is_kept(box: Box) -> None:
    await box.put_file("locked", b"x", mode=0)
    assert (await box.execute("find locked -printf '%m\\n'")).stdout_text == "0\n"


async def test_relative_file_paths_start_at_the_boxs_working_directory(engine: Engine) -> None:
    async with engine.session(engine.spec(workdir="project")) as box:
        await box.put_file("notes.txt", b"here")
        result = await box.execute("pwd; cat notes.txt")
        assert result.stdout_text == "/workspace/project\nhere"
        assert await box.get_file("notes.txt") == b"here"
        assert await box.get_file("/workspace/project/notes.txt") == b"here"


async def test_large_file_round_trips_through_disk(box: Box, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(1 << 20) * 24)  # 24 MiB, sent and received in chunks
    await box.put_file("big.bin", source)
    check = await box.execute("sha256sum big.bin")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    assert check.stdout_text.split()[0] == digest
    copy = tmp_path / "copy.bin"
    assert await box.get_file_to("big.bin", copy) == source.stat().st_size
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == digest


async def test_stream_file_yields_chunks(box: Box) -> None:
    await box.execute("head -c 1000000 /dev/zero > zeros")
    chunks = [chunk async for chunk in box.stream_file("zeros")]
    assert len(chunks) > 1
    assert sum(map(len, chunks)) == 1_000_000


async def test_put_dir_and_get_dir_keep_the_tree(box: Box, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg" / "sub").mkdir(parents=True)
    (source / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
    (source / "README").write_bytes(ALL_BYTES)
    (source / "link").symlink_to("README")
    await box.put_dir(source, "project")
    listing = await box.execute("cd project && find . | sort && readlink link")
    assert listing.stdout_text.split() == [
        ".",
        "./README",
        "./link",
        "./pkg",
        "./pkg/sub",
        "./pkg/sub/mod.py",
        "README",
    ]
    await box.execute("echo new > project/pkg/new.txt")
    back = tmp_path / "back"
    await box.get_dir("project", back)
    assert (back / "pkg" / "new.txt").read_text() == "new\n"
    assert (back / "README").read_bytes() == ALL_BYTES


async def test_get_dir_refuses_links_out_of_the_destination(box: Box, tmp_path: Path) -> None:
    await box.execute("mkdir evil && ln -s /etc/passwd evil/passwd && ln -s ../../.. evil/up")
    with pytest.raises(SandboxError, match=r"rule takeback\.link"):
        await box.get_dir("evil", tmp_path / "out")
    assert not (tmp_path / "out" / "passwd").exists()
    assert not (tmp_path / "out" / "up").exists()


async def test_missing_file_is_a_clear_error(box: Box) -> None:
    with pytest.raises(SandboxError, match="No such file"):
        await box.get_file("nope.txt")


async def test_writing_to_the_read_only_root_fails_cleanly(box: Box, backend: str) -> None:
    with pytest.raises(SandboxError, match=READ_ONLY[backend == "gvisor"]):
        await box.put_file("/usr/evil", b"x" * 1_000_000)
    assert (await box.execute("echo still-fine")).stdout_text == "still-fine\n"


async def test_a_download_past_the_cap_is_refused_and_the_box_stops_sending(
    engine: Engine,
) -> None:
    """A sparse file of 20 GB: the host refuses it at max_file_bytes, whatever size the box
    announced, and the supervisor's sending thread ends instead of streaming the rest."""
    async with engine.session(engine.spec(max_file_bytes="1m")) as box:
        await box.execute("truncate -s 20G huge")
        idle = (await box.execute("ls /proc/1/task | wc -l")).stdout_text
        with pytest.raises(SandboxError, match=r"rule takeback\.size"):
            await box.get_file("huge")
        threads = ""
        for _ in range(500):  # each look is a round trip to the box, not a sleep
            threads = (await box.execute("ls /proc/1/task | wc -l")).stdout_text
            if threads == idle:
                break
        assert threads == idle


async def test_only_regular_files_are_downloaded(box: Box) -> None:
    await box.execute("mkfifo pipe")
    with pytest.raises(SandboxError, match="not a regular file"):
        await box.get_file("pipe")
    with pytest.raises(SandboxError, match="not a regular file"):
        await box.get_file("/dev/zero")
    assert (await box.execute("echo fine")).stdout_text == "fine\n"


async def test_a_name_with_a_newline_and_pax_syntax_comes_back_as_it_is(
    box: Box, tmp_path: Path
) -> None:
    made = await box.execute(
        "mkdir t && printf hi > \"t/$(printf '\\303\\251\\nx size=-1000000')\""
    )
    assert made.exit_code == 0, made.stderr_text
    await box.get_dir("t", tmp_path / "out")
    assert (tmp_path / "out" / "é\nx size=-1000000").read_bytes() == b"hi"


async def until(condition: Callable[[], bool], what: str, within: float = 30.0) -> None:
    """Wait for ``condition`` (looked at every 50 ms), failing after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"still not {what} after {within}s"
        await asyncio.sleep(0.05)


async def body_that_breaks(size: int) -> AsyncIterator[bytes]:
    """``size`` bytes of an upload, then the sender goes away."""
    yield b"x" * size
    raise ConnectionResetError("the client went away")


async def test_an_interrupted_upload_leaves_the_target_as_it_was(box: Box) -> None:
    await box.put_file("keep.txt", b"old")
    with pytest.raises(ConnectionResetError):
        await box.put_file("keep.txt", body_that_breaks(300_000))
    with pytest.raises(ConnectionResetError):
        await box.put_file("new.txt", body_that_breaks(300_000))
    assert await box.get_file("keep.txt") == b"old"
    assert (await box.execute("ls -A")).stdout_text == "keep.txt\n"


async def test_an_interrupted_archive_upload_unpacks_nothing(box: Box, tmp_path: Path) -> None:
    source = tmp_path / "tree"
    source.mkdir()
    (source / "a.txt").write_text("first")
    (source / "big.bin").write_bytes(os.urandom(2 << 20))
    whole = b"".join([chunk async for chunk in tar_of(source)])

    async def half() -> AsyncIterator[bytes]:
        yield whole[: len(whole) // 2]
        raise ConnectionResetError("the client went away")

    await box.put_file("project/kept.txt", b"kept")
    with pytest.raises(ConnectionResetError):
        await box.put_archive("project", half())
    listing = await box.execute("cd project && ls -A")
    assert listing.stdout_text == "kept.txt\n"


async def test_an_archive_is_unpacked_over_what_is_there(box: Box, tmp_path: Path) -> None:
    source = tmp_path / "tree"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "new.py").write_text("new")
    (source / "top.txt").write_text("replaced")
    await box.execute("mkdir -p project/pkg && echo old > project/pkg/old.py")
    await box.execute("echo before > project/top.txt")
    await box.put_dir(source, "project")
    listing = await box.execute("cd project && find . | sort && cat top.txt")
    assert listing.stdout_text.split() == [
        ".", "./pkg", "./pkg/new.py", "./pkg/old.py", "./top.txt", "replaced",
    ]  # fmt: skip


async def test_an_upload_that_fills_the_disk_is_refused_and_leaves_nothing(
    engine: Engine, tmp_path: Path
) -> None:
    async with engine.session(engine.spec(tmp_size="1m")) as box:
        before = (await box.execute("cd /tmp && ls -A")).stdout_text
        with pytest.raises(BoxDiskFull, match=r"full.*/tmp/big") as raised:
            await box.put_file("/tmp/big", os.urandom(2 << 20))
        assert 400 <= raised.value.http_status < 500
        assert (await box.execute("cd /tmp && ls -A")).stdout_text == before
        tree = tmp_path / "tree"
        tree.mkdir()
        (tree / "big").write_bytes(os.urandom(2 << 20))
        with pytest.raises(BoxDiskFull, match="full"):
            await box.put_dir(tree, "/tmp")
        assert (await box.execute("cd /tmp && ls -A")).stdout_text == before


async def test_a_write_to_the_read_only_root_is_a_4xx(box: Box, backend: str) -> None:
    refusal = "Permission denied|read-only" if backend == "gvisor" else "read-only"
    with pytest.raises(PathRefused, match=refusal) as raised:
        await box.put_file("/usr/x", b"x")
    assert 400 <= raised.value.http_status < 500
    with pytest.raises(PathRefused, match=refusal):
        await box.put_archive("/usr/lib/x", chunks_of(b"\0" * 1024))


async def test_an_archive_upload_that_is_not_tar_is_refused(box: Box) -> None:
    with pytest.raises(InvalidRequest, match="not a tar archive"):
        await box.put_archive("unpacked", chunks_of(bytes(range(256)) * 64))
    assert (await box.execute("cd unpacked && ls -A")).stdout_text == ""


async def test_a_nul_in_a_path_is_refused_by_the_box_too(box: Box) -> None:
    with pytest.raises(InvalidRequest, match="NUL"):
        await box.put_file("a\0b", b"x")
    with pytest.raises(InvalidRequest, match="NUL"):
        await box.get_file("a\0b")
    with pytest.raises(InvalidRequest, match="NUL"):
        await box.put_archive("a\0b", chunks_of(b""))
    with pytest.raises(InvalidRequest, match="NUL"):
        [chunk async for chunk in box.stream_archive("a\0b")]


@pytest.mark.parametrize(
    "backend",
    # A gVisor box's files are opened by its own kernel, not the host's: nothing to see
    # in the host's /proc (the cancel itself is the supervisor's, the same on every backend).
    [p for p in HOST_SEES_BOX_PROCESSES if p.values[0] != "gvisor"],
)
async def test_a_download_ends_in_the_box_when_its_session_ends(engine: Engine) -> None:
    name = f"endless-{secrets.token_hex(4)}"
    async with engine.session() as box:
        await box.execute(f"truncate -s 200M {name}")
        download = aiter(box.stream_file(name))
        await anext(download)
        assert held_open(name)
    await until(lambda: not held_open(name), "closed by the box")
    await download.aclose()


async def test_an_upload_never_replaces_what_is_not_a_regular_file(box: Box) -> None:
    await box.execute("mkdir -p made && mkfifo pipe")
    with pytest.raises(PathRefused, match="directory"):
        await box.put_file("made/", b"x")  # a directory's name, not a file's
    with pytest.raises(PathRefused, match="directory"):
        await box.put_file("newdir/", b"x")
    with pytest.raises(InvalidRequest, match="not a regular file"):
        await box.put_file("pipe", b"x")
    with pytest.raises(InvalidRequest, match="not a regular file"):
        await box.put_file("/dev/null", b"x")
    listing = (await box.execute("ls -A; test -p pipe && echo fifo")).stdout_text.split()
    assert listing == ["made", "pipe", "fifo"]
