"""`golem agent`: the bare agent loop on a directory, in a box; then the diff it made.

The directory is copied into a fresh box, the agent works there (every command in the box,
the model called from the host), and the result is copied back: the directory changes
exactly where the agent changed files (``--dry-run`` only shows the diff).
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from golem.cli import options
from golem.core.console import markup, terminal
from golem.core.errors import ConfigError, GolemError, InvalidRequest

if TYPE_CHECKING:
    from golem.agent import Agent
    from golem.agent.events import AgentOutcome
    from golem.blueprint.workspace import Layout
    from golem.cli.tree_sync import TreeChange
    from golem.core.config import GolemConfig
    from golem.forge import GitRepo
    from golem.sandbox import Box, Engine

__all__ = ["agent_command"]


def agent_command(
    task: str = typer.Argument(..., help="What the agent should do."),
    workspace: Path = typer.Option(
        ..., "--workspace", help="The directory to work on (copied into the box and back)."
    ),
    model: str | None = typer.Option(
        None, "--model", help="provider/model or scripted:PATH; default: [models] default."
    ),
    tools: list[str] | None = typer.Option(
        None, "--tools", help="Tools or toolsets (all, files, readonly); default: all."
    ),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="Dollar budget."),
    max_turns: int = typer.Option(50, "--max-turns", help="Model calls at most."),
    max_seconds: float | None = typer.Option(None, "--max-seconds", help="Wall-clock budget."),
    trajectory: Path | None = typer.Option(
        None, "--trajectory", help="Where to write the trajectory (default: state dir)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the diff, change nothing."),
    backend: str | None = options.BACKEND,
    image: str | None = options.IMAGE,
    memory: str | None = options.MEMORY,
    cpus: float | None = options.CPUS,
    timeout: float | None = options.TIMEOUT,
    config_file: Path | None = options.CONFIG,
) -> None:
    """Run the agent on a directory in a box and show the diff it made."""
    from golem.agent import Agent, Budget, make_model, make_tools
    from golem.cli.progress import AgentProgress
    from golem.sandbox import make_engine

    if not workspace.is_dir():
        raise InvalidRequest(f"--workspace {workspace} is not a directory")
    _scratch_parent(workspace)
    flags = options.BoxFlags(
        backend, image, None, memory, cpus, None, timeout, None, None, None, config_file
    )
    config = flags.load()
    budget = Budget(turns=max_turns, usd=budget_usd, wall_seconds=max_seconds)
    chosen_tools = make_tools(tools or ["all"])
    agent = Agent(
        make_model(model or config.models.default, config.models),
        chosen_tools,
        budget=budget,
        on_event=AgentProgress(terminal(stderr=True)),
    )
    path = trajectory or _trajectory_path(config)
    outcome = asyncio.run(_run(make_engine(config), agent, workspace, task, path, dry_run=dry_run))
    raise typer.Exit(0 if outcome.status == "done" else 1)


def _trajectory_path(config: GolemConfig) -> Path:
    from golem.core.ids import new_id

    stamp = time.strftime("%Y%m%d-%H%M%S")
    return config.state_dir / "trajectories" / f"{stamp}-{new_id('agent')}.jsonl"


async def _run(
    engine: Engine, agent: Agent, workspace: Path, task: str, path: Path, *, dry_run: bool
) -> AgentOutcome:
    from golem.blueprint.workspace import copy_into_box

    # No bytecode files: an edit that keeps a file's size within the second of a test run
    # would leave Python running the stale .pyc (and they are not changes to keep).
    spec = engine.spec(env={**engine.config.engine.defaults.env, "PYTHONDONTWRITEBYTECODE": "1"})
    async with engine, engine.session(spec) as box:
        layout = await copy_into_box(box, workspace)
        outcome = await agent.run(box, task, trajectory=path)
        await _take_back(box, workspace, layout, dry_run=dry_run)
    terminal(stderr=True).print(f"trajectory: {path}")
    return outcome


async def _take_back(box: Box, workspace: Path, layout: Layout, *, dry_run: bool) -> None:
    """What the agent changed, landed in a scratch directory (checked whole there), shown,
    and applied to ``workspace`` (checked whole again, with what the directory holds);
    a refusal changes nothing. The scratch directory, a tree a box made, is removed
    however this ends (a refusal, an error, Ctrl-C): nobody is ever pointed at it."""
    from golem.blueprint.workspace import take_back

    scratch = Path(tempfile.mkdtemp(prefix="golem-agent-", dir=_scratch_parent(workspace)))
    try:
        paths = await take_back(box, workspace, layout, repo=_work_tree(workspace), into=scratch)
        await _report_changes(workspace, scratch, paths, dry_run=dry_run)
    except GolemError:  # before the changes were applied, or with them undone
        terminal(stderr=True).print(f"nothing was changed in {workspace}")
        raise
    finally:  # not awaited: a second Ctrl-C must not leave it behind
        shutil.rmtree(scratch, ignore_errors=True)


def _scratch_parent(workspace: Path) -> Path:
    """Where the scratch directory goes: the system's temporary directory, unless it lies
    in ``workspace`` (the box's copy-back would land among the user's files, where git
    would find it)."""
    temporary = Path(tempfile.gettempdir()).resolve()
    if temporary.is_relative_to(workspace.resolve()):
        raise ConfigError(
            f"the temporary directory {temporary} lies in --workspace {workspace}, where the "
            "box's copy-back would land among your files: set TMPDIR elsewhere"
        )
    return temporary


def _work_tree(workspace: Path) -> GitRepo | None:
    """The directory as a git work tree (its changes found by git), or None (the whole
    directory is compared)."""
    from golem.forge import GitRepo

    return GitRepo(workspace, check_config=False) if (workspace / ".git").exists() else None


async def _report_changes(
    workspace: Path, result: Path, paths: list[str] | None, *, dry_run: bool
) -> None:
    from golem.cli.prs_cmd import print_diff
    from golem.cli.tree_sync import apply_changes, render_diff, without_ignored
    from golem.sandbox.landing import in_thread

    compared = await asyncio.to_thread(_compared, workspace, result, paths)
    changes = await without_ignored(compared, workspace)
    print_diff(render_diff(changes, workspace, result))
    console = terminal(stderr=True)
    if not changes:
        console.print("no files changed")
        return
    summary = ", ".join(f"{c.kind} {c.path}" for c in changes)
    if dry_run:
        said = markup("[yellow]dry run[/]: {} file(s) would change: {}", len(changes), summary)
        console.print(said)
    else:
        await in_thread(functools.partial(apply_changes, changes, result, workspace))
        console.print(f"{len(changes)} file(s) changed in {workspace}: {summary}")


def _compared(workspace: Path, result: Path, paths: list[str] | None) -> list[TreeChange]:
    """The changes, each one's way in ``workspace`` checked (no symlink on it) before
    anything, git included, looks at it there; a path the host cannot look at (too long,
    a loop of links) is a refusal naming it, not a crash."""
    from golem.cli.tree_sync import check_ways, compare_trees
    from golem.sandbox.landing import host_could_not

    try:
        compared = compare_trees(workspace, result, paths)
        check_ways(compared, workspace)
    except OSError as exc:
        where = Path(exc.filename or workspace)
        for root in (workspace, result):
            if where.is_relative_to(root):
                where = where.relative_to(root)
        raise host_could_not(where.as_posix(), exc, "compare") from None
    return compared
