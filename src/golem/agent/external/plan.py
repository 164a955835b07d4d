"""One concrete call of an external CLI: its template filled in for a task, a model, a
budget and the box's routes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from golem.agent.budget import Budget
from golem.agent.external.template import ExternalTemplate, fill
from golem.core.errors import ConfigError

__all__ = ["DROP_FILTER", "Invocation", "check_mcp", "plan_call"]

PROMPT_FILE = "prompt.md"
DROP_FILTER = """\
pattern=$1
shift
exec 4>&1
status=$({ { "$@" 3>&- 4>&-; echo $? >&3; } | grep --line-buffered -v -E -e "$pattern" >&4; } 3>&1)
exit "$status"
"""
"""Runs "$@" with its stdout lines matching $1 dropped, and exits with its exit code. The
command and its arguments stay separate words: no shell parses them."""


_NO_MCP = (
    "the {name} agent takes no MCP configuration (its template has no mcp_args, mcp_env "
    "or mcp_files), so it cannot be given the step's toolshed tools: remove the step's "
    "toolshed patterns, or choose claude, codex or goose"
)
"""Why a step with toolshed tools cannot run a CLI."""


@dataclass(frozen=True)
class Invocation:
    """Everything one run of the CLI needs."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None
    files: dict[str, str]
    """Absolute box paths and their content, written before the call."""
    timeout: float
    limited_by_budget: bool
    """Whether ``timeout`` is the budget's wall clock (rather than the call's own)."""
    command: list[str]
    """The CLI's own argv, without the output filter around it, for display."""


def plan_call(
    template: ExternalTemplate,
    *,
    task: str,
    prompt: str,
    model: str | None,
    budget: Budget,
    run_dir: str,
    box_env: Mapping[str, str],
    extra_args: Sequence[str] = (),
    timeout: float,
    mcp_url: str | None = None,
) -> Invocation:
    """Fill ``template`` in; ``timeout`` is the call's own limit, which the budget's wall
    clock may shorten; ``mcp_url``: the step's tools, as an MCP server the CLI is told of
    through the template's ``mcp_*`` fields."""
    values = {
        "task": task,
        "prompt": prompt,
        "prompt_file": f"{run_dir}/{PROMPT_FILE}",
        "run_dir": run_dir,
        **{f"env:{name}": value for name, value in box_env.items()},
    }
    items = list(template.argv)
    if model:
        values["model"] = model
        items += template.model_args
    if budget.turns is not None and template.turns_args:
        values["max_turns"] = str(budget.turns)
        items += template.turns_args
    if budget.usd is not None and template.usd_args:
        values["max_usd"] = f"{budget.usd:g}"
        items += template.usd_args
    env, files = dict(template.env), dict(template.files)
    if mcp_url is not None:
        check_mcp(template)
        values["mcp_url"] = mcp_url
        items += template.mcp_args
        env.update(template.mcp_env)
        files.update(template.mcp_files)
    command = _filled(template, [*items], values) + list(extra_args)
    wall = budget.wall_seconds
    return Invocation(
        argv=_filtered(template, command),
        env={name: _filled(template, [v], values)[0] for name, v in env.items()},
        stdin=_filled(template, [template.stdin], values)[0].encode() if template.stdin else None,
        files=_files(template, files, values, run_dir, prompt),
        timeout=min(timeout, wall) if wall is not None else timeout,
        limited_by_budget=wall is not None and wall <= timeout,
        command=command,
    )


def check_mcp(template: ExternalTemplate) -> None:
    """ConfigError when the CLI cannot be given a step's tools."""
    if not template.speaks_mcp:
        raise ConfigError(_NO_MCP.format(name=template.name))


def _filled(template: ExternalTemplate, texts: list[str], values: Mapping[str, str]) -> list[str]:
    try:
        return [fill(text, values) for text in texts]
    except KeyError as exc:
        key = exc.args[0]
        why = (
            "but no model was given (pass model=...)"
            if key == "model"
            else f"which {'the box does not set' if key.startswith('env:') else 'is not set'}"
        )
        raise ConfigError(f"the {template.name} agent's template uses {{{key}}}, {why}") from None


def _files(
    template: ExternalTemplate,
    contents: Mapping[str, str],
    values: Mapping[str, str],
    run_dir: str,
    prompt: str,
) -> dict[str, str]:
    files = {f"{run_dir}/{PROMPT_FILE}": prompt}
    for path, content in contents.items():
        files[f"{run_dir}/{path}"] = _filled(template, [content], values)[0]
    return files


def _filtered(template: ExternalTemplate, command: list[str]) -> list[str]:
    if template.drop_stdout is None:
        return command
    return ["/bin/sh", "-c", DROP_FILTER, "golem-filter", template.drop_stdout, *command]
