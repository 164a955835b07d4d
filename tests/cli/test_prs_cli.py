"""`golem prs show` prints a pull request's diff as it is: no line wrapped or cut at the
terminal's width, so the diff can be read, copied or piped to `git apply`."""

from __future__ import annotations

import asyncio
import os
import pty
import subprocess
import sys
from pathlib import Path

from golem.forge import LocalForge, PullRequestDraft
from golem.store import SqlStore
from tests.cli.invoke import golem

LONG = "x = " + " + ".join(f"value_{n}" for n in range(40))
DIFF = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
    f"@@ -1 +1 @@\n-x = 1\n+{LONG}\n+\tindented = [1, 2]  # [bold]not markup[/]\n"
    "+print('\x1b]0;retitled\x07\x1b[2Jcleared')\n"
)


def open_pull_request(env: dict[str, str], diff: str) -> int:
    async def create() -> int:
        Path(env["GOLEM_STATE_DIR"]).mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{Path(env['GOLEM_STATE_DIR']) / 'golem.db'}"
        store = await SqlStore.connect(url)
        try:
            draft = PullRequestDraft(
                repo="/srv/demo.git", base="main", head="golem/fix", title="fix", body="Fixed."
            )
            return (await LocalForge(store).open_pull_request(draft, diff=diff)).number
        finally:
            await store.close()

    return asyncio.run(create())


def test_prs_show_prints_long_diff_lines_whole_on_a_narrow_terminal(
    golem_env: dict[str, str],
) -> None:
    number = open_pull_request(golem_env, DIFF)
    shown = golem({**golem_env, "COLUMNS": "40"}, "prs", "show", str(number))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.decode().splitlines()
    assert f"+{LONG}" in lines
    assert "+\tindented = [1, 2]  # [bold]not markup[/]" in lines
    assert shown.stdout.decode().endswith(DIFF)


def test_prs_show_on_a_terminal_keeps_long_lines_and_drops_escape_sequences(
    golem_env: dict[str, str],
) -> None:
    number = open_pull_request(golem_env, DIFF)
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "golem", "prs", "show", str(number)],
        stdout=follower,
        stderr=follower,
        env={**golem_env, "COLUMNS": "40", "TERM": "xterm"},
        close_fds=True,
    ) as process:
        os.close(follower)
        output = b""
        while chunk := _read(leader):
            output += chunk
        assert process.wait(timeout=60) == 0, output
    os.close(leader)
    shown = output.decode()
    assert LONG in shown  # one line, however narrow the terminal
    assert "\x1b]0;" not in shown
    assert "\x1b[2J" not in shown
    assert "print('cleared')" in shown  # the sequences gone, with what they carried


def _read(fd: int) -> bytes:
    """The next bytes of a terminal, b"" once its last writer is gone."""
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: every process holding the terminal has closed it
        return b""
