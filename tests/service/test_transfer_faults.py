"""File transfers over the API under faults and unkind clients, against a real server: a
client that leaves ends its transfer in the box, an upload lands whole or not at all,
returned files are read through their cap, and a client's or a box's condition (a full
disk, the read-only root, a NUL in a path, a body that is not tar) is a 4xx problem."""

from __future__ import annotations

import secrets
import socket
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.sandbox.held_files import held_open
from tests.service.served import Served
from tests.service.transfer_sessions import (  # noqa: F401 - its fixtures
    acme,
    key,
    open_session,
    session,
    shell,
    until,
)

pytestmark = pytest.mark.bwrap


def test_a_download_ends_in_the_box_when_its_client_leaves(
    acme: httpx.Client,  # noqa: F811 - fixtures, imported above
    session: str,  # noqa: F811 - fixtures, imported above
) -> None:
    name = f"endless-{secrets.token_hex(4)}"
    shell(acme, session, f"truncate -s 200M {name}")
    with acme.stream("GET", f"/v1/sessions/{session}/files", params={"path": name}) as got:
        assert got.status_code == 200
        chunks = got.iter_raw()
        next(chunks)
        assert held_open(name)
    until(lambda: not held_open(name), "closed by the box")


@pytest.mark.parametrize(("route", "path"), [("files", "{name}"), ("archive", ".")])
def test_a_download_ends_in_the_box_when_its_session_is_deleted(
    served: Served,
    acme: httpx.Client,  # noqa: F811 - fixtures, imported above
    route: str,
    path: str,
) -> None:
    session = open_session(acme)  # noqa: F811 - fixtures, imported above
    name = f"endless-{secrets.token_hex(4)}"
    shell(acme, session, f"truncate -s 200M {name}")
    asked = {"path": path.format(name=name)}
    with acme.stream("GET", f"/v1/sessions/{session}/{route}", params=asked) as got:
        assert got.status_code == 200
        chunks = got.iter_raw()
        next(chunks)
        assert held_open(name)
        with served.client(acme.headers["Authorization"].split()[1]) as other:
            assert other.delete(f"/v1/sessions/{session}").status_code == 204
        until(lambda: not held_open(name), "closed by the box")


def test_an_interrupted_upload_leaves_the_target_as_it_was(
    served: Served,
    key: str,  # noqa: F811 - fixtures, imported above
    acme: httpx.Client,  # noqa: F811 - fixtures, imported above
    session: str,  # noqa: F811 - fixtures, imported above
) -> None:
    acme.put(f"/v1/sessions/{session}/files", params={"path": "keep.txt"}, content=b"old")
    look = "ls -A; cat keep.txt"
    assert shell(acme, session, look) == "keep.txt\nold"
    url = httpx.URL(served.url)
    head = (
        f"PUT /v1/sessions/{session}/files?path=keep.txt HTTP/1.1\r\nHost: {url.host}\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {8 << 20}\r\n\r\n"
    )
    with socket.create_connection((url.host, url.port)) as client:
        client.sendall(head.encode() + b"x" * (2 << 20))
        until(lambda: shell(acme, session, look) != "keep.txt\nold", "landing in the box")
    until(lambda: shell(acme, session, look) == "keep.txt\nold", "as it was")


def test_an_interrupted_archive_upload_unpacks_nothing(
    served: Served,
    key: str,  # noqa: F811 - fixtures, imported above
    acme: httpx.Client,  # noqa: F811 - fixtures, imported above
    session: str,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "big.bin").write_bytes(b"y" * (4 << 20))
    with tarfile.open(tmp_path / "tree.tar", "w") as archive:
        archive.add(tree / "big.bin", arcname="big.bin")
    whole = (tmp_path / "tree.tar").read_bytes()
    acme.put(f"/v1/sessions/{session}/files", params={"path": "project/kept.txt"}, content=b"k")
    look = "ls -A project"
    assert shell(acme, session, look) == "kept.txt\n"
    url = httpx.URL(served.url)
    head = (
        f"PUT /v1/sessions/{session}/archive?path=project HTTP/1.1\r\nHost: {url.host}\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {len(whole)}\r\n\r\n"
    )
    with socket.create_connection((url.host, url.port)) as client:
        client.sendall(head.encode() + whole[: len(whole) // 2])
        until(lambda: shell(acme, session, look) != "kept.txt\n", "landing in the box")
    until(lambda: shell(acme, session, look) == "kept.txt\n", "as it was")


def test_a_client_that_leaves_mid_body_is_one_line_in_the_log_never_a_traceback(
    served: Served,
    key: str,  # noqa: F811 - fixtures, imported above
    acme: httpx.Client,  # noqa: F811 - fixtures, imported above
    session: str,  # noqa: F811 - fixtures, imported above
) -> None:
    acme.put(f"/v1/sessions/{session}/files", params={"path": "kept.txt"}, content=b"kept")
    look = "ls -A; cat kept.txt"
    assert shell(acme, session, look) == "kept.txt\nkept"
    url = httpx.URL(served.url)
    cut = [  # a file, an archive, a JSON body: each cut off a quarter of the way
        ("PUT", f"/v1/sessions/{session}/files?path=kept.txt", b"x" * (2 << 20)),
        ("PUT", f"/v1/sessions/{session}/archive?path=unpacked", b"\0" * (2 << 20)),
        ("POST", f"/v1/sessions/{session}/exec", b'{"cmd": "' + b"y" * (2 << 20)),
    ]
    start = len(served.output)
    for method, target, body in cut:
        head = (
            f"{method} {target} HTTP/1.1\r\nHost: {url.host}\r\nAuthorization: Bearer {key}"
            f"\r\nContent-Type: application/octet-stream\r\nContent-Length: {8 << 20}\r\n\r\n"
        )
        with socket.create_connection((url.host, url.port)) as client:
            client.sendall(head.encode() + body)
        said = f"{method} {target.split('?')[0]} left"
        until(lambda said=said: any(said in line for line in served.output[start:]), said)
    log = "".join(served.output[start:])
    assert "Traceback" not in log, log[-3000:]
    assert len([line for line in served.output[start:] if " left after " in line]) == 3, log
    assert shell(acme, session, look) == "kept.txt\nkept"  # the session as it was, and alive


def test_returned_files_are_read_through_their_cap(acme: httpx.Client, served: Served) -> None:  # noqa: F811 - fixtures, imported above
    session = open_session(acme, max_file_bytes="1m")  # noqa: F811 - fixtures, imported above
    try:
        shell(acme, session, "head -c 3000000 /dev/zero > big")
        before = peak_memory(served)
        done = acme.post(
            f"/v1/sessions/{session}/exec", json={"cmd": "true", "return_files": ["big"]}
        )
        assert done.status_code == 422, done.text
        assert "max_file_bytes (1m)" in done.json()["detail"]
        device = acme.post(
            f"/v1/sessions/{session}/exec", json={"cmd": "true", "return_files": ["/dev/zero"]}
        )
        assert device.status_code == 422, device.text
        assert "not a regular file" in device.json()["detail"]
        longer = acme.post(  # its size says 0: refused at once, never read to the cap
            f"/v1/sessions/{session}/exec",
            json={"cmd": "true", "return_files": ["/proc/kallsyms"]},
        )
        assert longer.status_code == 422, longer.text
        assert "more than its size says" in longer.json()["detail"]
        assert peak_memory(served) - before < 64 << 20
    finally:
        acme.delete(f"/v1/sessions/{session}")


def peak_memory(served: Served) -> int:
    """The server process's peak resident memory so far, in bytes."""
    status = Path(f"/proc/{served.process.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def test_a_full_disk_on_upload_is_a_413_and_leaves_nothing(acme: httpx.Client) -> None:  # noqa: F811 - fixtures, imported above
    session = open_session(acme, tmp_size="1m")  # noqa: F811 - fixtures, imported above
    try:
        before = shell(acme, session, "ls -A /tmp")
        put = acme.put(
            f"/v1/sessions/{session}/files", params={"path": "/tmp/big"}, content=b"x" * (2 << 20)
        )
        assert put.status_code == 413, put.text
        assert "full" in put.json()["detail"]
        assert shell(acme, session, "ls -A /tmp") == before
    finally:
        acme.delete(f"/v1/sessions/{session}")


def test_a_write_to_the_read_only_root_is_a_4xx(acme: httpx.Client, session: str) -> None:  # noqa: F811 - fixtures, imported above
    for route in ("files", "archive"):
        put = acme.put(f"/v1/sessions/{session}/{route}", params={"path": "/usr/x"}, content=b"")
        assert put.status_code == 422, put.text
        assert "read-only" in put.json()["detail"]


def test_an_archive_that_is_not_tar_is_a_422(acme: httpx.Client, session: str) -> None:  # noqa: F811 - fixtures, imported above
    put = acme.put(
        f"/v1/sessions/{session}/archive",
        params={"path": "unpacked"},
        content=bytes(range(256)) * 64,
    )
    assert put.status_code == 422, put.text
    assert "not a tar archive" in put.json()["detail"]
    assert shell(acme, session, "ls -A unpacked") == ""


def test_a_nul_in_a_path_is_a_422_wherever_a_path_is_taken(
    acme: httpx.Client,  # noqa: F811 - fixtures, imported above
    session: str,  # noqa: F811 - fixtures, imported above
) -> None:
    base = f"/v1/sessions/{session}"
    nul = {"path": "a\0b"}
    answers = [
        acme.get(f"{base}/files", params=nul),
        acme.put(f"{base}/files", params=nul, content=b"x"),
        acme.get(f"{base}/archive", params=nul),
        acme.get(f"{base}/archive", params={"path": ".", "paths": ["a\0b"]}),
        acme.put(f"{base}/archive", params=nul, content=b""),
        acme.post(f"{base}/exec", json={"cmd": "true", "return_files": ["a\0b"]}),
        acme.post(f"{base}/exec", json={"cmd": "true", "workdir": "a\0b"}),
        acme.post(f"{base}/exec", json={"cmd": "true", "files": {"a\0b": ""}}),
        acme.post("/v1/sessions", json={"spec": {"workdir": "a\0b"}}),
    ]
    for answer in answers:
        assert answer.status_code == 422, (answer.request.url, answer.text)
        assert "NUL" in answer.text, answer.text
