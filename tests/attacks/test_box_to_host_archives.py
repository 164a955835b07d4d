"""Attacker suite, box -> host: hand-made tar streams fed to ``land_archive``, as a box whose
supervisor an attacker controls would send them (everything a program in the box says is
untrusted, the archive's bytes too). Headers that claim gigabytes, entries of every kind
the host must not make, paths and links that leave the tree or reach .git, a write through
a link the archive itself planted, too many entries, a truncated or foreign stream.

Each must be refused with ``UnsafeBoxOutput`` naming the rule, nothing of it beneath the
destination (and nothing outside it), and the host's peak memory far below what the
headers claim.
"""

from __future__ import annotations

import asyncio
import os
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.core import UnsafeBoxOutput
from golem.sandbox.takeback import TakebackLimits, land_archive
from tests.attacks.takeback_harness import (
    entry,
    links_leaving,
    peak_memory_growth,
    raw_header,
    special_files,
    stream_of,
    tar_of,
)

MiB = 1024 * 1024
GiB = 1024 * MiB
LIMITS = TakebackLimits(max_file_bytes=MiB, max_bytes=64 * MiB)
MEMORY_BOUND = 200 * MiB


async def refused(data: bytes, destination: Path, limits: TakebackLimits = LIMITS,
                  **options: object) -> UnsafeBoxOutput:  # fmt: skip
    """The refusal of landing ``data`` in ``destination`` (it must be refused)."""
    with pytest.raises(UnsafeBoxOutput) as got:
        await land_archive(stream_of(data), destination, limits, **options)  # type: ignore[arg-type]
    return got.value


def pax_header_claiming(size: int) -> bytes:
    """An extended (pax) header that says its records take ``size`` bytes."""
    return raw_header(b"././@PaxHeader", size, tarfile.XHDTYPE) + b"\0" * 1024


@pytest.mark.parametrize(
    ("header", "what"),
    [
        (pax_header_claiming(10 * GiB), "pax header of 10 GiB"),
        (raw_header(b"././@LongLink", 100 * MiB, tarfile.GNUTYPE_LONGNAME), "long name"),
        (raw_header(b"././@LongLink", 100 * MiB, tarfile.GNUTYPE_LONGLINK), "long link"),
        (raw_header(b"huge.bin", 50 * GiB, tarfile.REGTYPE), "50 GiB file"),
        (raw_header(b"huge.bin", 2**80, tarfile.REGTYPE), "2**80-byte file"),
    ],
)
async def test_a_header_claiming_gigabytes_is_refused_without_allocating_them(
    header: bytes, what: str, tmp_path: Path
) -> None:
    destination = tmp_path / "landed"
    with peak_memory_growth() as growth:
        error = await refused(header + b"\0" * 4096, destination)
    assert error.rule == "takeback.size", f"{what}: {error}"
    assert growth[0] < MEMORY_BOUND
    assert list(destination.iterdir()) == []


def pax_entry(path: str, data: bytes = b"x") -> bytes:
    """A regular file whose pax record ``path`` overrides its innocent ustar name."""
    info, content = entry("innocent.txt", data=data)
    info.pax_headers = {"path": path}
    return tar_of((info, content))


KINDS = {
    "character-device": (tar_of(entry("tty", tarfile.CHRTYPE)), "takeback.kind"),
    "block-device": (tar_of(entry("disk", tarfile.BLKTYPE)), "takeback.kind"),
    "fifo": (tar_of(entry("pipe", tarfile.FIFOTYPE)), "takeback.kind"),
    "hard-link-out": (
        tar_of(entry("pw", tarfile.LNKTYPE, link="../../etc/passwd")), "takeback.kind"
    ),
    "hard-link-inside": (
        tar_of(entry("a", data=b"x"), entry("b", tarfile.LNKTYPE, link="a")), "takeback.kind"
    ),
    "gnu-sparse": (tar_of(entry("s", tarfile.GNUTYPE_SPARSE), fmt=tarfile.GNU_FORMAT),
                   "takeback.kind"),
    "contiguous-file": (tar_of(entry("c", tarfile.CONTTYPE, data=b"x")), "takeback.kind"),
    "setuid": (tar_of(entry("sh", data=b"x", mode=0o4755)), "takeback.mode"),
    "setgid": (tar_of(entry("sh", data=b"x", mode=0o2755)), "takeback.mode"),
    "sticky": (tar_of(entry("sh", data=b"x", mode=0o1644)), "takeback.mode"),
    "absolute-path": (tar_of(entry("/etc/cron.d/golem", data=b"x")), "takeback.path"),
    "parent-path": (tar_of(entry("../outside", data=b"x")), "takeback.path"),
    "pax-path-override": (pax_entry("../../outside"), "takeback.path"),
    "pax-path-into-git": (pax_entry(".git/hooks/pre-commit"), "takeback.git"),
    "git-in-any-case": (tar_of(entry("a/.Git/config", data=b"x")), "takeback.git"),
    "git-trailing-dot": (tar_of(entry("a/.git./config", data=b"x")), "takeback.git"),
    "git-short-name": (tar_of(entry("a/GIT~1/config", data=b"x")), "takeback.git"),
    "link-absolute": (tar_of(entry("l", tarfile.SYMTYPE, link="/etc/passwd")), "takeback.link"),
    "link-up": (tar_of(entry("a/l", tarfile.SYMTYPE, link="../../x")), "takeback.link"),
    "link-into-git": (tar_of(entry("l", tarfile.SYMTYPE, link="x/../.git")), "takeback.link"),
    "link-then-write-through": (
        tar_of(entry("real", tarfile.DIRTYPE, mode=0o755), entry("l", tarfile.SYMTYPE, link="real"),
               entry("l/f", data=b"x")),
        "takeback.host-link",
    ),
    "file-then-link-over-it": (
        tar_of(entry("a", data=b"x"), entry("a", tarfile.SYMTYPE, link="/etc/passwd")),
        "takeback.link",
    ),
    "name-too-long": (tar_of(entry("a/" * 2100 + "f", data=b"x")), "takeback.path"),
    "not-a-tar": (os.urandom(4096), "takeback.kind"),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(KINDS))
async def test_an_entry_the_host_must_not_make_is_refused_naming_its_rule(
    kind: str, tmp_path: Path
) -> None:
    data, rule = KINDS[kind]
    destination = tmp_path / "landed"
    error = await refused(data, destination)
    assert error.rule == rule, str(error)
    assert str(error).endswith(f"(rule {rule}; see docs/security.md)")
    assert special_files(tmp_path) == []
    assert links_leaving(destination) == []
    assert not (tmp_path / "outside").exists()


async def test_a_write_through_a_link_already_on_the_host_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    destination = tmp_path / "landed"
    destination.mkdir()
    (destination / "shared").symlink_to(outside)
    (destination / "cfg").symlink_to(outside / "config")
    error = await refused(tar_of(entry("shared/config", data=b"box")), destination)
    assert error.rule == "takeback.host-link"
    assert list(outside.iterdir()) == []
    # The final name being a link is no way through either: the link is replaced.
    await land_archive(stream_of(tar_of(entry("cfg", data=b"box"))), destination, LIMITS)
    assert list(outside.iterdir()) == []
    assert not (destination / "cfg").is_symlink()


async def test_more_entries_than_the_limit_are_refused(tmp_path: Path) -> None:
    many = tar_of(*[entry(f"f{i}", data=b"") for i in range(11)])
    limits = TakebackLimits(max_file_bytes=MiB, max_bytes=MiB, max_entries=10)
    error = await refused(many, tmp_path / "landed", limits)
    assert error.rule == "takeback.size"


async def test_an_archive_over_the_transfer_cap_is_refused_as_it_streams(tmp_path: Path) -> None:
    limits = TakebackLimits(max_file_bytes=MiB, max_bytes=MiB)
    endless = raw_header(b"f", MiB, tarfile.REGTYPE) + b"\0" * (80 * MiB)
    error = await refused(endless, tmp_path / "landed", limits)
    assert error.rule == "takeback.size"
    assert not (tmp_path / "landed").exists() or list((tmp_path / "landed").iterdir()) == []


async def test_a_truncated_archive_is_refused_naming_the_rule(tmp_path: Path) -> None:
    whole = tar_of(entry("f", data=b"x" * 600_000))
    destination = tmp_path / "landed"
    error = await refused(whole[:100_000], destination)
    assert error.rule in ("takeback.size", "takeback.kind"), str(error)
    assert not (destination / "f").exists()
    assert [p.name for p in destination.iterdir()] == []  # no temporary file left either


async def test_many_long_names_do_not_make_the_host_hold_the_archive_several_times(
    tmp_path: Path,
) -> None:
    # 24,000 entries of one 4,000-byte path: a 120 MB archive, well within the default
    # 2 GiB a transfer and 200,000 entries; the host must not keep every header it read.
    name = "/".join(["x" * 249] * 16)[:4000]
    info, _ = entry(name, tarfile.DIRTYPE, mode=0o755)
    one = info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    spool = tmp_path / "many.tar"
    with spool.open("wb") as sink:
        for _ in range(24_000):
            sink.write(one)
        sink.write(b"\0" * 1024)

    async def chunks() -> AsyncIterator[bytes]:
        with spool.open("rb") as source:
            while chunk := await asyncio.to_thread(source.read, MiB):
                yield chunk

    limits = TakebackLimits(max_file_bytes=MiB, max_bytes=2 * GiB)
    with peak_memory_growth() as growth:
        await land_archive(chunks(), tmp_path / "landed", limits)
    assert growth[0] < MEMORY_BOUND, f"the host's peak memory grew by {growth[0] >> 20} MiB"


async def test_an_entry_the_host_did_not_ask_for_is_refused(tmp_path: Path) -> None:
    data = tar_of(entry("asked.txt", data=b"x"), entry("extra.txt", data=b"y"))
    error = await refused(data, tmp_path / "landed", wanted=lambda path: path == "asked.txt")
    assert error.rule == "takeback.path"
    assert not (tmp_path / "landed" / "extra.txt").exists()


async def test_only_the_trees_own_git_is_left_out_and_never_landed(tmp_path: Path) -> None:
    destination = tmp_path / "landed"
    own = tar_of(entry("./.git/hooks/pre-commit", data=b"#!/bin/sh\n", mode=0o755),
                 entry("kept.txt", data=b"x"))  # fmt: skip
    await land_archive(stream_of(own), destination, LIMITS, skip_git=[""])
    assert sorted(p.name for p in destination.iterdir()) == ["kept.txt"]
    for spelled in (".GIT/config", "sub/.git/config", ".git./config"):
        error = await refused(tar_of(entry(spelled, data=b"x")), destination,
                              skip_git=[""])  # fmt: skip
        assert error.rule == "takeback.git", spelled
    assert sorted(p.name for p in destination.iterdir()) == ["kept.txt"]
