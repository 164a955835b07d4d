"""Looking for a value (a key, a token) in a box, where it must not be."""

from __future__ import annotations

import json

from golem.sandbox import Box, ExecRequest

__all__ = ["SCAN", "traces_in_box"]

SCAN = """\
import json, os, sys
needle = (sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read())[::-1].encode()
me = str(os.getpid())
hits = []
for pid in os.listdir("/proc"):
    if pid.isdigit() and pid != me:
        for part in ("environ", "cmdline"):
            try:
                if needle in open(f"/proc/{pid}/{part}", "rb").read():
                    hits.append(f"/proc/{pid}/{part}")
            except OSError:
                pass
for top in ("/run/golem", "/tmp", "/workspace", "/etc/ssl", "/dev/shm"):
    for root, _, files in os.walk(top):
        for name in files:
            try:
                if needle in open(os.path.join(root, name), "rb").read():
                    hits.append(os.path.join(root, name))
            except OSError:
                pass
print(json.dumps(hits))
"""
"""Prints every /proc environ and cmdline, and every file where a box keeps things, that
holds a value. It is given the value reversed (as its argument, or on stdin), so that its
own command line cannot be a hit."""


async def traces_in_box(box: Box, value: str) -> list[str]:
    """Where in ``box`` (processes' environments and command lines, files where a box keeps
    things) ``value`` is: a list that should be empty."""
    result = await box.execute(ExecRequest(code=SCAN, runtime="python", stdin=value[::-1].encode()))
    assert result.exit_code == 0, result.stderr_text
    found: list[str] = json.loads(result.stdout_text)
    return found
