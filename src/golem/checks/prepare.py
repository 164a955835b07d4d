"""Checks that cannot be prepared are dropped, not fatal: an install command that serves
only some checks (``checks_served``: a tool's first run that fetches its hooks or package,
a pip install of the checks' tools) and fails drops those checks (not run, each with why
and what makes it run), so long as a test check is left to verify the change. Any other
failing install, or one that would leave nothing to verify the change with, is fatal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from golem.checks.contracts import CheckResult
from golem.checks.detect import checks_served
from golem.forge import markdown

__all__ = ["OUTPUT_SHOWN", "dropped_by", "why_not_run"]

_URL_HOST = re.compile(r"\bhttps?://([A-Za-z0-9.-]+)")
OUTPUT_SHOWN = 300


def dropped_by(
    failed: CheckResult, checks: Sequence[tuple[str, str]]
) -> list[tuple[str, str]] | None:
    """The checks (name, command) a failed install drops: those it serves alone, when a
    test check is left to verify the change (only one can, once a check was dropped);
    None when the failure is fatal."""
    served = checks_served(failed.command, [command for _, command in checks])
    if served is None:
        return None
    dropped = [(name, command) for name, command in checks if command in served]
    if not any(name == "test" and (name, command) not in dropped for name, command in checks):
        return None  # nothing would verify the change: the install failed
    return dropped


def why_not_run(failed: CheckResult) -> str:
    """Why a check ``failed`` prepared is not run, and what makes it run."""
    how = failed.reason or ("timed out" if failed.timed_out else f"exit {failed.exit_code}")
    hosts = sorted(set(_URL_HOST.findall(failed.output_tail)))
    reach = (
        f"let the install reach {', '.join(hosts)} (golem.toml's [dependencies] registries)"
        if hosts
        else "let the install reach what it fetches (golem.toml's [dependencies] registries)"
    )
    tail = " ".join(failed.output_tail.split())[-OUTPUT_SHOWN:]
    return (
        f"its preparation {markdown.code(failed.command)} failed ({how}): "
        f"{markdown.code('…' + tail)}; to run it, {reach}, "
        "or name the commands that prepare it in .golem.toml's [commands] install"
    )
