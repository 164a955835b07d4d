"""golem.sandbox.takeback and HostTree on hand-made archives: each rule refuses its whole
class, legitimate trees land as they were, and nothing is written through a host link."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.core.errors import UnsafeBoxOutput
from golem.sandbox.hosttree import HostTree
from golem.sandbox.takeback import TakebackLimits, land_archive

LIMITS = TakebackLimits(max_file_bytes=1024 * 1024, max_bytes=4 * 1024 * 1024, max_entries=100)


def entry(
    name: str, kind: bytes = tarfile.REGTYPE, **fields: object
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    data = fields.pop("data", b"")
    assert isinstance(data, bytes)
    for key, value in fields.items():
        setattr(info, key, value)
    if kind == tarfile.REGTYPE:
        info.size = len(data)
    if kind == tarfile.DIRTYPE and "mode" not in fields:
        info.mode = 0o755
    return info, data


def archive(*entries: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


async def chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 4096):
        yield data[start : start + 4096]


async def land(data: bytes, destination: Path, **options: object) -> list[str]:
    landed = await land_archive(chunks(data), destination, LIMITS, **options)  # type: ignore[arg-type]
    return landed.paths


async def refused(data: bytes, destination: Path, **options: object) -> UnsafeBoxOutput:
    with pytest.raises(UnsafeBoxOutput) as caught:
        await land(data, destination, **options)
    return caught.value


async def test_a_legitimate_tree_lands_as_it_was(tmp_path: Path) -> None:
    data = archive(
        entry("./", tarfile.DIRTYPE),
        entry("./src", tarfile.DIRTYPE),
        entry("./src/app.py", data=b"print('hi')\n", mode=0o664),
        entry("./run.sh", data=b"#!/bin/sh\n", mode=0o775),
        entry("./docs", tarfile.DIRTYPE, mode=0o2775),
        entry("./docs/README", tarfile.SYMTYPE, linkname="../src/app.py"),
        entry("./empty", data=b""),
    )
    paths = await land(data, tmp_path / "out")
    out = tmp_path / "out"
    assert paths == ["src", "src/app.py", "run.sh", "docs", "docs/README", "empty"]
    assert (out / "src/app.py").read_bytes() == b"print('hi')\n"
    assert (out / "src/app.py").stat().st_mode & 0o7777 == 0o644
    assert (out / "run.sh").stat().st_mode & 0o7777 == 0o755
    assert (out / "docs").stat().st_mode & 0o7777 == 0o755
    assert os.readlink(out / "docs/README") == "../src/app.py"
    assert not [p for p in out.rglob("*") if p.name.startswith(".golem-takeback-")]


@pytest.mark.parametrize(
    "name",
    [".git/config", "sub/.git/config", ".GIT/hooks/x", "a/.git./x", "a/.git /x", "GIT~1/x", ".git"],
)
async def test_no_git_name_lands_in_any_spelling(tmp_path: Path, name: str) -> None:
    error = await refused(
        archive(entry(name, data=b"[core]\n\tfsmonitor = touch /tmp/x\n")), tmp_path
    )
    assert error.rule == "takeback.git"
    assert not list(tmp_path.rglob("config"))


@pytest.mark.parametrize("name", ["/etc/passwd", "../escape", "a/../../escape"])
async def test_paths_outside_the_tree_are_refused(tmp_path: Path, name: str) -> None:
    error = await refused(archive(entry(name, data=b"x")), tmp_path / "out")
    assert error.rule in ("takeback.path", "takeback.kind")
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize(
    ("target", "rule"),
    [
        ("/etc/passwd", "takeback.link"),
        ("../../outside", "takeback.link"),
        ("a/../../..", "takeback.link"),
        (".git/config", "takeback.link"),
        ("sub/.git", "takeback.link"),
        ("", "takeback.link"),
    ],
)
async def test_links_out_of_the_tree_or_into_git_are_refused(
    tmp_path: Path, target: str, rule: str
) -> None:
    error = await refused(archive(entry("x/link", tarfile.SYMTYPE, linkname=target)), tmp_path)
    assert error.rule == rule
    assert not (tmp_path / "x" / "link").is_symlink()


@pytest.mark.parametrize(
    "kind", [tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE]
)
async def test_only_files_directories_and_links_cross(tmp_path: Path, kind: bytes) -> None:
    data = archive(entry("dev", kind, linkname="other", devmajor=1, devminor=5))
    error = await refused(data, tmp_path)
    assert error.rule == "takeback.kind"
    assert not (tmp_path / "dev").exists()


@pytest.mark.parametrize("mode", [0o4755, 0o2755, 0o1644, 0o6777])
async def test_setuid_setgid_and_sticky_files_are_refused(tmp_path: Path, mode: int) -> None:
    error = await refused(archive(entry("tool", data=b"\x7fELF", mode=mode)), tmp_path)
    assert error.rule == "takeback.mode"
    assert not (tmp_path / "tool").exists()


async def test_a_file_over_the_cap_is_refused_before_it_is_written(tmp_path: Path) -> None:
    data = archive(entry("big", data=b"x" * (LIMITS.max_file_bytes + 1)))
    error = await refused(data, tmp_path)
    assert error.rule == "takeback.size"
    assert not (tmp_path / "big").exists()


async def test_an_archive_over_the_cap_is_refused_while_it_streams(tmp_path: Path) -> None:
    async def endless() -> AsyncIterator[bytes]:
        while True:
            yield b"\0" * 1024 * 1024

    small = TakebackLimits(max_file_bytes=1024, max_bytes=1024, max_entries=10)
    with pytest.raises(UnsafeBoxOutput) as caught:
        await land_archive(endless(), tmp_path, small)
    assert caught.value.rule == "takeback.size"


async def test_too_many_entries_are_refused(tmp_path: Path) -> None:
    data = archive(*[entry(f"f{n}", data=b"") for n in range(LIMITS.max_entries + 1)])
    assert (await refused(data, tmp_path)).rule == "takeback.size"


async def test_names_past_their_cap_are_refused_but_a_name_repeated_counts_once(
    tmp_path: Path,
) -> None:
    small = TakebackLimits(max_file_bytes=1024, max_bytes=1024**2, max_name_bytes=100)
    repeated = archive(*[entry("a" * 60, data=b"") for _ in range(10)])
    landed = await land_archive(chunks(repeated), tmp_path / "one", small)
    assert landed.paths == ["a" * 60]
    distinct = archive(entry("a" * 60, data=b""), entry("b" * 60, data=b""))
    with pytest.raises(UnsafeBoxOutput) as caught:
        await land_archive(chunks(distinct), tmp_path / "two", small)
    assert caught.value.rule == "takeback.size"


async def test_a_huge_pax_header_is_refused_without_reading_it(tmp_path: Path) -> None:
    """A pax header announcing 10 GB: tarfile would read it whole into memory."""
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = 8**11 - 1  # 8 GB, the most a ustar size field holds
    data = header.tobuf(tarfile.USTAR_FORMAT) + b"\0" * 4096
    error = await refused(data, tmp_path)
    assert error.rule in ("takeback.size", "takeback.kind")


async def test_garbage_is_not_an_archive(tmp_path: Path) -> None:
    error = await refused(b"this is not a tar archive" * 100, tmp_path)
    assert error.rule == "takeback.kind"


async def test_only_the_paths_asked_for_land(tmp_path: Path) -> None:
    data = archive(entry("asked.txt", data=b"ok"), entry("extra.txt", data=b"sneaky"))
    error = await refused(data, tmp_path, wanted=lambda path: path == "asked.txt")
    assert error.rule == "takeback.path"
    assert not (tmp_path / "extra.txt").exists()


async def test_the_trees_own_git_is_skipped_when_asked(tmp_path: Path) -> None:
    data = archive(entry("./.git/config", data=b"x"), entry("./a.txt", data=b"a"))
    assert await land(data, tmp_path, skip_git=[""]) == ["a.txt"]
    assert not (tmp_path / ".git").exists()


async def test_nothing_is_written_through_a_symlink_on_the_host(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "through").symlink_to(outside)
    (tree / "target.txt").symlink_to(outside / "victim.txt")
    error = await refused(archive(entry("through/config", data=b"pwned")), tree)
    assert error.rule == "takeback.host-link"
    assert not (outside / "config").exists()
    await land(archive(entry("target.txt", data=b"replaced")), tree)
    assert not (outside / "victim.txt").exists(), "the link was replaced, not followed"
    assert (tree / "target.txt").read_bytes() == b"replaced"
    assert not (tree / "target.txt").is_symlink()


async def test_a_directory_replaces_a_file_and_a_file_replaces_a_directory(tmp_path: Path) -> None:
    (tmp_path / "was_file").write_text("x")
    (tmp_path / "was_dir").mkdir()
    (tmp_path / "was_dir" / "inner").write_text("y")
    data = archive(
        entry("was_file", tarfile.DIRTYPE), entry("was_file/now.txt", data=b"n"),
        entry("was_dir", data=b"now a file"),
    )  # fmt: skip
    await land(data, tmp_path)
    assert (tmp_path / "was_file" / "now.txt").read_bytes() == b"n"
    assert (tmp_path / "was_dir").read_bytes() == b"now a file"


def test_removing_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "link").symlink_to(outside)
    with HostTree(tree) as host:
        assert host.remove("link/keep.txt") is False
        assert host.remove("link") is True
    assert (outside / "keep.txt").read_text() == "keep"
    assert not (tree / "link").exists()


def pax(name: str, headers: dict[str, str], data: bytes = b"") -> bytes:
    info, _ = entry(name, data=data)
    info.pax_headers = headers
    return archive((info, data))


@pytest.mark.parametrize(
    "data",
    [
        pax("a", {"size": "-1000"}),
        pax("a", {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.realsize": "-1"}),
        pax("a", {"comment": "x"}),
        entry("s", tarfile.GNUTYPE_SPARSE)[0].tobuf(tarfile.GNU_FORMAT) + b"\0" * 2048,
    ],
    ids=["negative-size", "gnu-sparse-keys", "unknown-key", "sparse-entry"],
)
async def test_headers_golems_supervisor_never_writes_are_refused_as_they_stream(
    tmp_path: Path, data: bytes
) -> None:
    error = await refused(data, tmp_path)
    assert error.rule == "takeback.kind"
    assert list(tmp_path.iterdir()) == []


async def test_a_global_pax_header_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": "x"}) as tar:  # fmt: skip
        tar.addfile(tarfile.TarInfo("a"), io.BytesIO(b""))
    assert (await refused(buffer.getvalue(), tmp_path)).rule == "takeback.kind"


async def test_a_name_that_holds_pax_syntax_lands_as_a_name(tmp_path: Path) -> None:
    """A file named with a newline and 'size=-1000000' in it: pax records are read by their
    length, so the name is a name (it once froze the host's event loop)."""
    name = "é\nx size=-1000000"
    assert await land(archive(entry(name, data=b"hi")), tmp_path) == [name]
    assert (tmp_path / name).read_bytes() == b"hi"
