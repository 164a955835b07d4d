"""`golem run`: a task in, a pull request out (or a branch and an escalation)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from golem.cli import options
from golem.core.errors import InvalidRequest

if TYPE_CHECKING:
    from golem.blueprint import RunState
    from golem.core.config import GolemConfig

__all__ = ["EXIT_CODES", "follow_up_of", "repo_argument", "run_command", "run_with_progress"]

EXIT_CODES = {"succeeded": 0, "failed": 1, "escalated": 3, "cancelled": 4, "unverified": 5}
"""What `golem run` and `golem runs resume` exit with, by the run's final status."""


def run_command(
    repo: str = typer.Option(..., "--repo", help="A git URL or a local repository path."),
    task: str | None = typer.Option(None, "--task", help="What to do, in words."),
    issue: str | None = typer.Option(
        None, "--issue", help="An issue: URL, owner/name#N (GitLab: group/project#N), or a file."
    ),
    blueprint: str | None = typer.Option(
        None, "--blueprint", help="minion (follow-up with --pr), or a YAML file."
    ),
    model: str | None = typer.Option(None, "--model", help="provider/model or scripted:PATH."),
    forge: str | None = typer.Option(
        None, "--forge", help="github, gitlab or local (default: [forge] provider)."
    ),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="Dollars for the run."),
    base: str | None = typer.Option(None, "--base", help="Base branch (default: the repo's)."),
    attempts: int | None = typer.Option(
        None,
        "--attempts",
        help="Attempts in parallel boxes, each verified by the checks; the best ships "
        "(default: the blueprint's, 1).",
    ),
    pr: str | None = typer.Option(
        None,
        "--pr",
        help="Answer the review of this pull request on its branch (a follow-up run): "
        "owner/name#N, its URL, or N for --repo's; --task adds what to do.",
    ),
    backend: str | None = options.BACKEND,
    tier: str | None = options.TIER,
    image: str | None = options.IMAGE,
    submit: bool = typer.Option(
        False,
        "--submit",
        help="Queue the run on the golem server of [remote] url (key: [remote] key_env) and "
        "follow it here; Ctrl-C cancels it there.",
    ),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Run a blueprint on a repository and end with a pull request (or, with --pr, answer
    a pull request's review with new commits on its branch)."""
    if pr is None and (task is None) == (issue is None):
        raise InvalidRequest("give exactly one of --task or --issue (or --pr)")
    if pr is not None and issue is not None:
        raise InvalidRequest("--pr follows up a pull request: give --task, not --issue")
    if submit and (backend is not None or image is not None):
        raise InvalidRequest("--backend and --image are the server's to choose with --submit")
    flags = options.BoxFlags(
        backend, image, None, None, None, None, None, None, None, None, config_file
    )
    config = flags.load()
    fields: dict[str, object] = {
        "repo": repo_argument(repo),
        "task": task,
        "issue": issue,
        "model": model,
        "forge": forge,
        "budget_usd": budget_usd,
        "base": base,
        "tier": tier,
        "attempts": attempts,
    }
    if blueprint is not None:
        fields["blueprint"] = blueprint
    if pr is not None:
        chosen = forge or config.forge.provider
        fields["follow_up"] = follow_up_of(pr, repo_argument(repo), forge=chosen, request=task)
        fields["task"] = None
    if submit:
        from golem.cli.submitted import run_on_server

        state = run_on_server(config, fields)
        raise typer.Exit(EXIT_CODES.get(state.status, 1))
    from golem.core.imports import collector_paused

    with collector_paused():
        from pydantic import ValidationError

        from golem.blueprint import RunRequest
    try:
        request = RunRequest.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise InvalidRequest(f"--{where.replace('_', '-')}: {error['msg']}") from None
    from golem.agent import load_provider_early

    load_provider_early(request.model or config.models.default)  # while the box starts
    state = run_with_progress(config, lambda runner: runner.start(request))
    raise typer.Exit(EXIT_CODES.get(state.status, 1))


def follow_up_of(ref: str, repo: str, *, forge: str, request: str | None) -> dict[str, object]:
    """The follow-up of pull request ``ref``: ``owner/name#N`` or its URL (GitLab:
    ``group/project!N`` or its URL), or ``N`` for ``repo``'s (the local forge files its
    pull requests under the repository's path)."""
    from golem.forge import parse_issue_ref
    from golem.forge.refs import parse_gitlab_ref, split_project, split_repo

    number = ref.strip().removeprefix("#").removeprefix("!")
    if number.isdigit():
        name = repo if forge == "local" else None
        name = name or (split_project(repo) if forge == "gitlab" else "/".join(split_repo(repo)))
        return {"repo": name, "number": int(number), "request": request or ""}
    if forge == "gitlab":
        found = parse_gitlab_ref(ref)
        return {"repo": found.project, "number": found.iid, "request": request or ""}
    parsed = parse_issue_ref(ref)
    return {"repo": parsed.repo, "number": parsed.number, "request": request or ""}


def repo_argument(value: str) -> str:
    """A local path made absolute (the run's checkout is cloned from it later)."""
    path = Path(value)
    return str(path.resolve()) if path.exists() else value


def run_with_progress(config: GolemConfig, work: object) -> RunState:
    """Run ``work(runner)`` with live progress on stderr and the report on stdout. A run
    paused because its model provider stays down is resumed here at its time (interrupted,
    it stays paused in the store: `golem runs resume`, or a `golem serve` on this state)."""
    from golem.core.imports import collector_paused

    with collector_paused():
        from golem.blueprint import Runner
        from golem.cli.run_progress import RunProgress, print_report
        from golem.core.console import terminal
        from golem.sandbox import make_engine
        from golem.store import SqlStore

    console = terminal(stderr=True)

    async def main() -> RunState:
        store = await SqlStore.open(config)
        try:
            async with make_engine(config) as engine:
                runner = Runner(config, engine=engine, store=store, on_event=RunProgress(console))
                state: RunState = await work(runner)  # type: ignore[operator]
                while state.status == "waiting" and state.pause is not None:
                    await asyncio.sleep(max(state.pause.resume_at - time.time(), 0.0))
                    state = await runner.resume(state.id)
                return state
        finally:
            await store.close()

    state = asyncio.run(main())
    print_report(terminal(), state)
    return state
