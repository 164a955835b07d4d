"""Attacker suite, box -> host: a transfer is decided whole before anything of it lands.

A box sends entries the host would accept (edits, new files and directories, a link
inside the tree, a file over a directory) and then one it refuses, by any rule: a path out
of the tree or not asked for, a .git, a device or hard link, a setuid file, a size over a
cap, a link out (by its text, or through other links of the transfer), a write through a
link the host has, a git directory made of the transfer's entries (alone, or with files
the host already has), a truncated archive. Each must leave the destination exactly as it
was (every directory, file, mode and link), for ``land_archive`` itself and for every
caller: a run's ``take_back`` into its checkout and ``get_dir``, on bubblewrap, dockerd and
Podman (``golem agent`` and ``get_dir`` through `golem serve`: test_box_to_host_agent.py and
test_box_to_host_files.py).
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from golem.blueprint.workspace import copy_into_box, take_back
from golem.core import UnsafeBoxOutput
from golem.forge import GitRepo
from golem.sandbox import Engine
from golem.sandbox.takeback import TakebackLimits, land_archive
from tests.attacks.takeback_harness import (
    EXAMPLES,
    Markers,
    entry,
    git_dirs_below,
    host_destination,
    listing,
    make_markers,
    stream_of,
    tar_of,
    user_git_everywhere,
)
from tests.blueprint.repos import git
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP

MiB = 1024 * 1024
LIMITS = TakebackLimits(max_file_bytes=MiB, max_bytes=4 * MiB, max_entries=100)

DIR = tarfile.DIRTYPE
LINK = tarfile.SYMTYPE

pytestmark = SHARED_LOOP


ACCEPTED = [
    entry("README.md", data=b"the box's readme\n"),
    entry("src", DIR, mode=0o755),
    entry("src/app.py", data=b"print('box')\n"),
    entry("src/new.py", data=b"#!/usr/bin/env python3\n", mode=0o755),
    entry("docs", data=b"a file where a directory was\n"),
    entry("lib", LINK, link="src"),
    entry("new-dir/deep/file.txt", data=b"deep\n"),
    entry("aaa-repo", DIR, mode=0o755),
    entry("aaa-repo/notes.txt", data=b"not yet a repository\n"),
]
"""What the host would take, had the transfer ended there."""

BARE_PARTS = [
    entry("zzz-bare/HEAD", data=b"ref: refs/heads/main\n"),
    entry("zzz-bare/objects", DIR, mode=0o755),
    entry("zzz-bare/refs", DIR, mode=0o755),
    entry("zzz-bare/config", data=b"[core]\n\tworktree = ..\n\tfsmonitor = touch /tmp/x\n"),
]

# Each case: the entries after the accepted ones, and the rule that refuses them.
REFUSALS = {
    "path-out-of-the-tree": ([entry("../escape", data=b"x")], "takeback.path"),
    "git-name": ([entry("zzz/.git/config", data=b"[core]\n\tfsmonitor = touch /tmp/x\n")],
                 "takeback.git"),
    "device": ([entry("zzz-tty", tarfile.CHRTYPE)], "takeback.kind"),
    "hard-link": ([entry("zzz-hard", tarfile.LNKTYPE, link="README.md")], "takeback.kind"),
    "setuid-file": ([entry("zzz-tool", data=b"\x7fELF", mode=0o4755)], "takeback.mode"),
    "file-over-max-file-bytes": ([entry("zzz-big", data=b"x" * (MiB + 1))], "takeback.size"),
    "transfer-over-max-bytes": (
        [entry(f"zzz-{n}", data=b"x" * (MiB - 1)) for n in range(5)], "takeback.size"
    ),
    "too-many-entries": ([entry(f"zzz-{n}", data=b"") for n in range(100)], "takeback.size"),
    "absolute-link": ([entry("zzz-link", LINK, link="/etc/passwd")], "takeback.link"),
    "links-out-through-each-other": (
        [entry("zzz-b", LINK, link="."), entry("zzz-up", LINK, link="zzz-b/..")], "takeback.link"
    ),
    "link-into-git": ([entry("zzz-cfg", LINK, link="src/../.git/config")], "takeback.link"),
    "write-through-a-host-link": ([entry("shared/planted", data=b"x")], "takeback.host-link"),
    "write-through-its-own-link": (
        [entry("zzz-l", LINK, link="src"), entry("zzz-l/planted", data=b"x")],
        "takeback.host-link",
    ),
    "git-directory-of-its-entries": (BARE_PARTS, "takeback.git"),
    "git-directory-with-the-hosts-files": (
        [entry("cache/HEAD", data=b"ref: refs/heads/main\n")], "takeback.git"
    ),
}  # fmt: skip


TOO_LONG_FOR_A_LINK = "./" * 2048
"""A relative target every rule lets through (it stays inside, of plain names, 4,096
bytes) that no Linux file system takes (PATH_MAX counts the NUL)."""

HOST_FAILURES = {
    "a-link-the-file-system-refuses": [entry("zzz-link", LINK, link=TOO_LONG_FOR_A_LINK)],
    "in-a-new-directory": [entry("zzz-dir/deep/link", LINK, link=TOO_LONG_FOR_A_LINK)],
}
"""Entries the host's file system refuses when the tree is changed, after the accepted
entries changed it: what was changed is undone."""


@pytest.mark.parametrize("case", list(HOST_FAILURES))
async def test_a_write_the_host_fails_midway_is_undone_whole(case: str, tmp_path: Path) -> None:
    destination = host_destination(tmp_path / "landed")
    before = listing(destination)
    data = tar_of(*ACCEPTED, *HOST_FAILURES[case])
    with pytest.raises(UnsafeBoxOutput) as got:
        await land_archive(stream_of(data), destination, LIMITS, remove_missing=["old.txt"])
    assert got.value.rule == "takeback.path", str(got.value)
    assert "could not write" in str(got.value)
    assert listing(destination) == before


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_a_refusal_after_accepted_entries_leaves_the_destination_as_it_was(
    case: str, tmp_path: Path
) -> None:
    refused_entries, rule = REFUSALS[case]
    destination = host_destination(tmp_path / "landed")
    before = listing(destination)
    data = tar_of(*ACCEPTED, *refused_entries)
    with pytest.raises(UnsafeBoxOutput) as got:
        await land_archive(stream_of(data), destination, LIMITS, remove_missing=["old.txt"])
    assert got.value.rule == rule, str(got.value)
    assert listing(destination) == before
    assert not (tmp_path / "escape").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["landed"]  # no spool left beside


async def test_a_truncated_archive_after_accepted_entries_leaves_the_destination_as_it_was(
    tmp_path: Path,
) -> None:
    destination = host_destination(tmp_path / "landed")
    before = listing(destination)
    whole = tar_of(*ACCEPTED, entry("zzz-last", data=b"y" * 600_000))
    with pytest.raises(UnsafeBoxOutput) as got:
        await land_archive(stream_of(whole[: len(whole) - 300_000]), destination, LIMITS)
    assert got.value.rule in ("takeback.kind", "takeback.size"), str(got.value)
    assert listing(destination) == before


async def test_an_entry_not_asked_for_after_asked_ones_leaves_the_destination_as_it_was(
    tmp_path: Path,
) -> None:
    destination = host_destination(tmp_path / "landed")
    before = listing(destination)
    data = tar_of(*ACCEPTED, entry("zzz-extra", data=b"x"))
    with pytest.raises(UnsafeBoxOutput) as got:
        await land_archive(
            stream_of(data), destination, LIMITS, wanted=lambda path: not path.startswith("zzz")
        )
    assert got.value.rule == "takeback.path"
    assert listing(destination) == before


async def test_the_accepted_entries_alone_land_whole(tmp_path: Path) -> None:
    """The control: without the refused entry, the same transfer lands (so each refusal
    above is the refused entry's doing)."""
    destination = host_destination(tmp_path / "landed")
    await land_archive(
        stream_of(tar_of(*ACCEPTED)), destination, LIMITS, remove_missing=["old.txt"]
    )
    after = listing(destination)
    assert after["README.md"] == ("file", 0o644, b"the box's readme\n")
    assert after["src/new.py"] == ("file", 0o755, b"#!/usr/bin/env python3\n")
    assert after["docs"] == ("file", 0o644, b"a file where a directory was\n")
    assert after["lib"] == ("link", "src")
    assert after["new-dir/deep/file.txt"] == ("file", 0o644, b"deep\n")
    assert "docs/guide.md" not in after
    assert "old.txt" not in after
    assert after["shared"] == ("link", "../outside")
    assert not [name for name in after if ".golem-" in name]


# Real boxes ------------------------------------------------------------------------------


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every box attack runs on bubblewrap, dockerd and Podman."""
    return str(request.param)


@pytest.fixture
def markers(reachable_dir: Path) -> Markers:
    return make_markers(reachable_dir)


def checkout_of(parent: Path) -> Path:
    """A run's checkout: examples/calculator as a git work tree with one commit, and files
    it ignores that hold the makings of a git directory (objects/ and refs/, no HEAD)."""
    checkout = parent / "checkout"
    shutil.copytree(EXAMPLES / "calculator", checkout)
    (checkout / ".gitignore").write_text("cache/objects/\ncache/refs/\n")
    git("init", "-q", "-b", "main", cwd=checkout)
    git("add", "-A", cwd=checkout)
    git("commit", "-q", "-m", "seed", cwd=checkout)
    (checkout / "cache" / "objects" / "info").mkdir(parents=True)
    (checkout / "cache" / "objects" / "info" / "packs").write_text("")
    (checkout / "cache" / "refs" / "heads").mkdir(parents=True)
    (checkout / "cache" / "refs" / "heads" / "main").write_text("0" * 40 + "\n")
    return checkout


EDITS = (
    "echo 'changed by the box' >> README.md && "
    "sed -i 's/return a - b/return a + b/' calculator.py && "
    "mkdir -p aaa-new/deep && echo new > aaa-new/deep/file.txt"
)

BOX_REPO = (
    "mkdir -p aaa-repo/objects/info aaa-repo/refs/heads && "
    "printf 'ref: refs/heads/main\\n' > aaa-repo/HEAD && "
    "touch aaa-repo/objects/info/packs aaa-repo/refs/heads/main && "
    "printf '[core]\\n\\tworktree = ..\\n\\tfsmonitor = %s; false\\n' '{touch}' > aaa-repo/config"
)


def box_refusals(markers: Markers) -> dict[str, tuple[str, str]]:
    """What the box does after its ordinary edits, and the rule that refuses it."""
    fsmonitor = markers.touch("fsmonitor")
    return {
        "repository-then-git-name": (
            BOX_REPO.format(touch=fsmonitor) + " && git init -q zzz && echo x > zzz/f",
            "takeback.git",
        ),
        "setuid-file": ("cp /bin/sh zzz-shell && chmod 4755 zzz-shell", "takeback.mode"),
        "fifo-over-a-tracked-file": (
            "rm test_calculator.py && mkfifo test_calculator.py", "takeback.kind"
        ),
        "links-out-through-each-other": ("ln -s . zzz-b && ln -s zzz-b/.. zzz-up",
                                         "takeback.link"),
        "git-directory-with-the-hosts-files": (
            "printf 'ref: refs/heads/main\\n' > cache/HEAD", "takeback.git"
        ),
    }  # fmt: skip


RUN_CASES = ["repository-then-git-name", "setuid-file", "fifo-over-a-tracked-file",
             "links-out-through-each-other", "git-directory-with-the-hosts-files"]  # fmt: skip


@pytest.mark.parametrize(
    ("backend", "case"),
    [
        *[pytest.param(*backend.values, RUN_CASES[0], marks=backend.marks)
          for backend in BOTH_BACKENDS],
        *[pytest.param("process", case, marks=pytest.mark.bwrap) for case in RUN_CASES[1:]],
    ],
)  # fmt: skip
async def test_a_runs_take_back_refused_after_its_edits_leaves_the_checkout_as_it_was(
    case: str, engine: Engine, reachable_dir: Path, markers: Markers
) -> None:
    command, rule = box_refusals(markers)[case]
    checkout = checkout_of(reachable_dir)
    before = listing(checkout)
    async with engine.session() as box:
        layout = await copy_into_box(box, checkout)
        made = await box.execute(f"set -e; {EDITS}; {command}")
        assert made.exit_code == 0, made.stderr_text
        with pytest.raises(UnsafeBoxOutput) as got:
            await take_back(box, checkout, layout, repo=GitRepo(checkout, check_config=False))
    assert got.value.rule == rule, str(got.value)
    assert listing(checkout) == before
    assert git_dirs_below(checkout) == []
    user_git_everywhere(checkout)
    assert markers.left() == []


async def test_get_dir_refused_after_accepted_entries_leaves_the_destination_as_it_was(
    backend: str, engine: Engine, tmp_path: Path, markers: Markers
) -> None:
    destination = host_destination(tmp_path / "landed")
    before = listing(destination)
    command = BOX_REPO.format(touch=markers.touch("fsmonitor"))
    async with engine.session() as box:
        made = await box.execute(
            f"set -e; mkdir case && cd case && echo box > README.md && mkdir src && "
            f"echo new > src/new.py && {command} && mkdir -p zzz/.git && echo x > zzz/.git/config"
        )
        assert made.exit_code == 0, made.stderr_text
        with pytest.raises(UnsafeBoxOutput) as got:
            await box.get_dir("case", destination)
    assert got.value.rule == "takeback.git", str(got.value)
    assert listing(destination) == before
    assert markers.left() == []
