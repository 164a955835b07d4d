"""The host side of the box's file tools (the supervisor's ``tools`` module): run one of
their operations in a box, and move file contents in and out, with every problem the model
can fix raised as ``ToolProblem``."""

from __future__ import annotations

import json
from typing import Any

from golem.agent.tools.paths import shown
from golem.agent.tools.text import utf8
from golem.core import BoxCrashed, SandboxError
from golem.core.errors import ToolProblem
from golem.sandbox import Box, ExecRequest

__all__ = ["call_in_box", "get_bytes", "missing", "put_text"]

STDERR_TAIL = 2000


async def call_in_box(box: Box, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run ``request["op"]`` of the box's file tools and return its answer.

    The supervisor runs it in a child of its own, as the box's user: arguments travel as
    JSON in the request, so nothing the model wrote is ever parsed by a shell, and no
    interpreter starts."""
    tool = {"workdir": box.spec.workdir, **request}
    result = await box.execute(ExecRequest(tool=tool, timeout=timeout))
    op = request["op"]
    if result.timed_out:
        raise ToolProblem(
            f"{op} did not finish within {timeout:g}s and was stopped; "
            "narrow it down (a smaller directory, a glob)"
        )
    try:
        reply = json.loads(result.stdout)
    except ValueError:
        raise ToolProblem(
            f"the box could not run {op} (exit code {result.exit_code}): "
            f"{result.stderr_text[-STDERR_TAIL:].strip() or 'no error output'}"
        ) from None
    if "missing" in reply:
        raise ToolProblem(missing(reply["missing"], reply["suggestions"], box.spec.workdir))
    if "error" in reply:
        raise ToolProblem(str(reply["error"]))
    answer = reply["ok"]
    assert isinstance(answer, dict)
    return answer


def missing(path: str, suggestions: list[str], workdir: str) -> str:
    """Says that ``path`` does not exist, with the closest existing paths."""
    text = f"{shown(path, workdir)} does not exist"
    if not suggestions:
        return f"{text}; use ls or glob to find the path you mean"
    names = "\n".join(f"  {shown(item, workdir)}" for item in suggestions)
    return f"{text}. Did you mean:\n{names}"


async def get_bytes(box: Box, path: str) -> bytes:
    """A file's content from the box."""
    try:
        return await box.get_file(path)
    except SandboxError as exc:
        _reraise_unless_fixable(box, exc)
        where = shown(path, box.spec.workdir)
        raise ToolProblem(f"could not read {where}: {exc.message}") from None


async def put_text(box: Box, path: str, text: str) -> None:
    """Write ``text`` to a file in the box (parent directories are made)."""
    try:
        await box.put_file(path, utf8(text))
    except SandboxError as exc:
        _reraise_unless_fixable(box, exc)
        where = shown(path, box.spec.workdir)
        raise ToolProblem(f"could not write {where}: {exc.message}") from None


def _reraise_unless_fixable(box: Box, error: SandboxError) -> None:
    """A lost box or an ended session is the loop's concern, not the model's."""
    if isinstance(error, BoxCrashed) or box.closed:
        raise error
