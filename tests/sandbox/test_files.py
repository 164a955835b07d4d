"""File transfer in and out of real boxes: binary safe, streamed, and safe on the host."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from golem.core import SandboxError
from golem.sandbox import Box, Engine
from tests.conftest import BOTH_BACKENDS

pytestmark = pytest.mark.bwrap


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on both backends unless it pins one."""
    return str(request.param)


ALL_BYTES = bytes(range(256)) * 4


async def test_put_and_get_file_are_binary_safe(box: Box) -> None:
    await box.put_file("data/blob.bin", ALL_BYTES, mode=0o600)
    assert await box.get_file("/workspace/data/blob.bin") == ALL_BYTES
    result = await box.execute("stat -c %a data/blob.bin")
    assert result.stdout_text == "600\n"


async def test_a_file_mode_of_zero_is_kept(box: Box) -> None:
    await box.put_file("locked", b"x", mode=0)
    assert (await box.execute("stat -c %a locked")).stdout_text == "0\n"


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


async def test_writing_to_the_read_only_root_fails_cleanly(box: Box) -> None:
    with pytest.raises(SandboxError, match="Read-only file system"):
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
