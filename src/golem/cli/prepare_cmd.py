"""`golem prepare`: make or refresh a repository's prepared snapshot (a run of the
built-in ``prepare`` blueprint; docs/snapshots.md#prepared-repositories)."""

from __future__ import annotations

from pathlib import Path

import typer

from golem.cli import options
from golem.cli.run_cmd import EXIT_CODES, repo_argument, run_with_progress
from golem.core.errors import InvalidRequest

__all__ = ["prepare_command"]

PREPARE_TASK = "Prepare the repository: install, set up and warm up its base branch's head."


def prepare_command(
    repo: str = typer.Option(..., "--repo", help="A git URL or a local repository path."),
    branch: str | None = typer.Option(
        None, "--branch", help="The branch to prepare (default: the repository's)."
    ),
    backend: str | None = options.BACKEND,
    tier: str | None = options.TIER,
    image: str | None = options.IMAGE,
    submit: bool = typer.Option(
        False,
        "--submit",
        help="Prepare it on the golem server of [remote] url, for the key's tenant, and "
        "follow it here; Ctrl-C cancels it there.",
    ),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Make or refresh the prepared snapshot of a repository's branch: its head checked
    out, dependencies installed, setup and [prepared] warmup run; runs on the repository
    start from it."""
    if submit and (backend is not None or image is not None):
        raise InvalidRequest("--backend and --image are the server's to choose with --submit")
    flags = options.BoxFlags(
        backend, image, None, None, None, None, None, None, None, None, config_file
    )
    config = flags.load()
    fields: dict[str, object] = {
        "repo": repo_argument(repo),
        "task": PREPARE_TASK,
        "blueprint": "prepare",
        "base": branch,
        "tier": tier,
    }
    if submit:
        from golem.cli.submitted import run_on_server

        state = run_on_server(config, fields)
    else:
        from golem.blueprint import RunRequest

        request = RunRequest.model_validate(fields)
        state = run_with_progress(config, lambda runner: runner.start(request))
    raise typer.Exit(EXIT_CODES.get(state.status, 1))
