"""The JUnit XML a failed check wrote in the box: the XML files it modified (found by
``find`` in the box, newer than the ``STARTED`` mark the check's call writes as it starts:
a report the repository holds is older), those named like reports, read through the box's
capped downloads and left unread past ``MAX_XML``."""

from __future__ import annotations

import contextlib
import shlex

from golem.checks.reports import junit_paths
from golem.checks.reports.junit import MAX_XML
from golem.core.errors import GolemError
from golem.sandbox import Box, ExecRequest

__all__ = ["MAX_REPORTS", "STARTED", "junit_written"]

MAX_REPORTS = 10
STARTED = "/tmp/.golem-check-started"
_SKIPPED = ("node_modules", ".git", ".venv", "venv", ".tox", ".nox", "vendor")
_FIND_TIMEOUT = 30.0


async def junit_written(box: Box, workdir: str = "/workspace", command: str = "") -> list[str]:
    """The JUnit reports written under ``workdir`` since the last check's call started,
    those ``command`` names too (none when there are none, or the box cannot say)."""
    pruned = " -o ".join(f"-name {shlex.quote(name)}" for name in _SKIPPED)
    find = (
        f"find {STARTED} -printf '%T@ -\\n' && find {shlex.quote(workdir)} -xdev "
        f"\\( {pruned} \\) -prune -o -type f -name '*.xml' -size -{MAX_XML // 1024}k "
        "-printf '%T@ %p\\n' 2>/dev/null | head -n 1000"
    )
    try:
        found = await box.execute(ExecRequest(cmd=find, timeout=_FIND_TIMEOUT))
    except GolemError:
        return []
    paths = junit_paths(_written_since_start(found.stdout_text), command)
    documents = []
    for path in paths[:MAX_REPORTS]:
        if (document := await _read(box, path)) is not None:
            documents.append(document)
    return documents


def _written_since_start(listing: str) -> list[str]:
    """The paths of ``mtime path`` lines newer than the first line's (the mark's). A
    file's time has the kernel's coarse resolution (a few milliseconds): one written in
    the tick the mark was is left out, since the previous check may have written it just
    before; a test runner writes its report well after it started."""
    lines = [line.split(" ", 1) for line in listing.split("\n") if " " in line]
    try:
        started = float(lines[0][0])
        return [path for mtime, path in lines[1:] if float(mtime) > started]
    except (IndexError, ValueError):
        return []


async def _read(box: Box, path: str) -> str | None:
    """The file as text, or None past ``MAX_XML`` bytes (the download is stopped)."""
    data = bytearray()
    with contextlib.suppress(GolemError):
        async for chunk in box.stream_file(path):
            data += chunk
            if len(data) > MAX_XML:
                return None
        return data.decode("utf-8", "replace")
    return None
