"""golem.sandbox.holes: a file written with its blocks of zeros as holes holds exactly the
bytes it was given, however they were cut, and takes the disk only its data needs."""

from __future__ import annotations

import os
import random
from pathlib import Path

from golem.sandbox.holes import SparseWriter

MiB = 1024 * 1024


def written(path: Path, pieces: list[bytes]) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        writer = SparseWriter(fd)
        for piece in pieces:
            writer.write(piece)
        writer.finish()
    finally:
        os.close(fd)
    return path


def test_the_bytes_are_kept_whatever_the_pieces_and_their_alignment(tmp_path: Path) -> None:
    chance = random.Random(7)  # noqa: S311 - a repeatable layout, not a secret
    data = bytearray(3 * MiB + 123)
    for _ in range(40):  # islands of data in a sea of zeros, at odd offsets
        start, length = chance.randrange(len(data) - 5000), chance.randrange(1, 5000)
        data[start : start + length] = os.urandom(length)
    pieces, position = [], 0
    while position < len(data):
        size = chance.choice([1, 511, 4096, 4097, 65536, 200_000])
        pieces.append(bytes(data[position : position + size]))
        position += size
    path = written(tmp_path / "f", pieces)
    assert path.read_bytes() == bytes(data)


def test_zeros_cost_no_disk_and_a_file_may_end_in_a_hole(tmp_path: Path) -> None:
    path = written(tmp_path / "f", [b"head", bytes(8 * MiB), b"middle", bytes(8 * MiB)])
    assert path.stat().st_size == 16 * MiB + len(b"headmiddle")
    assert path.stat().st_blocks * 512 < MiB
    with path.open("rb") as handle:
        assert handle.read(4) == b"head"
        handle.seek(4 + 8 * MiB)
        assert handle.read(6) == b"middle"
