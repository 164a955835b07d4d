"""The server's malloc arenas stay few under concurrent load. glibc gives each thread that
allocates while the others hold theirs an arena of its own (up to 8 per core); the worker
threads of ``asyncio.to_thread`` and the store's each fragment theirs, and the soak
(bench/soak.py) saw the server's RSS grow about 2 MB a minute in those arenas, not in Python
objects (docs/performance.md, Soak). Counted here: the arenas' heaps in /proc/<pid>/maps."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.service.served import serving

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc arenas"),
]

HEAP = 64 << 20  # a glibc arena's heap: 64 MB of address space, aligned to its size
MAX_ARENAS = 2  # beside the main arena (the program break), what `golem serve` allows


def arena_heaps(pid: int) -> int:
    """glibc's non-main arenas: each a heap mapped at a 64 MB boundary, its used part
    read-write and the rest of the 64 MB reserved (---p) right after it."""
    regions = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        regions.append((start, end, fields[1], len(fields) > 5))
    heaps = 0
    for (start, end, perms, named), following in zip(regions, [*regions[1:], None], strict=True):
        if named or perms != "rw-p" or start % HEAP:
            continue
        reserved = following is not None and following[2] == "---p" and following[0] == end
        if end - start == HEAP or (
            reserved and following is not None and following[1] == start + HEAP
        ):
            heaps += 1
    return heaps


def test_the_server_keeps_few_malloc_arenas_under_concurrent_load(tmp_path: Path) -> None:
    with serving(tmp_path / "state") as served:
        key = served.key("arenas")

        def client(index: int) -> None:
            with served.client(key) as http:
                made = http.post("/v1/sessions", json={})
                assert made.status_code == 201, made.text
                base = f"/v1/sessions/{made.json()['id']}"
                for round_ in range(6):
                    data = f"{index}:{round_}\n".encode() * 2000
                    where = {"path": "/workspace/data.txt"}
                    assert http.put(f"{base}/files", params=where, content=data).status_code == 204
                    assert http.get(f"{base}/files", params=where).content == data
                    ran = http.post(f"{base}/exec", json={"cmd": ["true"]})
                    assert ran.status_code == 200, ran.text
                assert http.delete(base).status_code == 204

        with ThreadPoolExecutor(6) as pool:
            list(pool.map(client, range(12)))
        assert arena_heaps(served.process.pid) <= MAX_ARENAS
