"""Output that is not text: every byte value and UTF-8 characters cut in their middle,
written by a box in small pieces so that chunks end inside multi-byte sequences."""

from __future__ import annotations

from typing import Any

from golem.sandbox import ExecRequest, OutputEvent

PAYLOAD = bytes(range(256)) + "é€𝄞".encode() + b"\xc3" + bytes(range(255, -1, -1))
"""Every byte value both ways, characters of two, three and four bytes, a lone lead byte."""

ERR_PAYLOAD = PAYLOAD[::-1]


def writer(stdout: bytes = PAYLOAD, stderr: bytes = ERR_PAYLOAD) -> str:
    """Python that writes ``stdout`` and then ``stderr``, three bytes a write."""
    return (
        "import os\n"
        f"for fd, data in ((1, {stdout!r}), (2, {stderr!r})):\n"
        "    for start in range(0, len(data), 3):\n"
        "        os.write(fd, data[start : start + 3])\n"
    )


WRITER = writer()
"""Writes PAYLOAD to stdout and ERR_PAYLOAD to stderr."""

CUTS = [200, 257, 259, 263, 266, 400]
"""Where PIECES cut PAYLOAD: inside é, inside €, inside 𝄞, after the lone lead byte."""

PIECES = [PAYLOAD[a:b] for a, b in zip([0, *CUTS], [*CUTS, len(PAYLOAD)], strict=True)]


def stepper(pieces: list[bytes]) -> str:
    """Python that writes each piece to stdout only once a line has come on stdin for it
    (the first at once), so that each reaches the host as a chunk of its own."""
    return (
        "import os, sys\n"
        f"for index, piece in enumerate({pieces!r}):\n"
        "    if index:\n"
        "        sys.stdin.buffer.readline()\n"
        "    os.write(1, piece)\n"
    )


async def stepped_output(box: Any, pieces: list[bytes]) -> list[bytes]:
    """The data of each stdout event of ``stepper(pieces)`` run in ``box`` (a Box or a
    RemoteBox): the host lets the next piece go when an event has come."""
    request = ExecRequest(code=stepper(pieces), runtime="python")
    received: list[bytes] = []
    async with box.interact(request) as call:
        async for event in call.events():
            if isinstance(event, OutputEvent) and event.type == "stdout":
                received.append(event.data)
                await call.write(b"\n")
    return received
