"""`golem eval make|run|report|compare`: measure golem on your own repositories."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from golem import __version__
from golem.cli import options
from golem.core.console import GolemConsole, say_json, terminal
from golem.core.errors import ConfigError, EvalError

if TYPE_CHECKING:
    from golem.core.config import GolemConfig
    from golem.eval import Attempt, EvalTask, LeftOut, ResultsDir
    from golem.sandbox import Engine
    from golem.store import Store

__all__ = ["eval_app"]

T = TypeVar("T")

eval_app = typer.Typer(
    rich_markup_mode=None,
    help="Measure golem on your own repositories: make tasks, run them, compare runs.",
    no_args_is_help=True,
)


def _config(config_file: Path | None) -> GolemConfig:
    return options.BoxFlags(
        None, None, None, None, None, None, None, None, None, None, config_file
    ).load()


def _with_golem(config: GolemConfig, work: Callable[[Engine, Store], Awaitable[T]]) -> T:
    """``work(engine, store)`` on the configured engine (a server's, when [remote] url is
    set) and store."""

    from golem.sandbox import make_engine
    from golem.store import SqlStore

    async def main() -> T:
        store = await SqlStore.open(config)
        try:
            async with make_engine(config) as engine:
                return await work(engine, store)
        finally:
            await store.close()

    return asyncio.run(main())


def _parallel(config: GolemConfig, given: int | None) -> int:
    if given is not None and given < 1:
        raise ConfigError("--parallel is how many at once: give 1 or more")
    return given or config.server.max_runs


@eval_app.command("make")
def make_command(
    repo: str = typer.Option(
        ..., "--repo", help="A repository path or URL; owner/name (group/project) on a forge."
    ),
    from_merged_prs: int | None = typer.Option(
        None, "--from-merged-prs", help="The N pull requests merged last."
    ),
    commits: str | None = typer.Option(None, "--commits", help="The commits of range A..B."),
    forge: str | None = typer.Option(
        None, "--forge", help="With --from-merged-prs: github, gitlab or local ([forge] provider)."
    ),
    clone: str | None = typer.Option(
        None, "--clone", help="Clone from here (default: --repo, or the forge's URL for it)."
    ),
    out: Path = typer.Option(Path("tasks.jsonl"), "--out", help="The task file (added to)."),
    parallel: int | None = typer.Option(
        None, "--parallel", help="Changes tried at once (default: [server] max_runs)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print what was made as JSON."),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Turn merged pull requests (or commits) that changed both source and tests into tasks,
    as SWE-bench does: their tests run in golem's boxes before and after the fix; those
    that fail before and pass after are the task's. The others are left out, with why."""
    from golem.eval import read_tasks, write_tasks
    from golem.forge.factory import FORGES

    if (from_merged_prs is None) == (commits is None):
        raise ConfigError("give exactly one of --from-merged-prs N or --commits A..B")
    if from_merged_prs is not None and from_merged_prs < 1:
        raise ConfigError("--from-merged-prs is how many: give 1 or more")
    config = _config(config_file)
    chosen = forge or config.forge.provider
    if chosen not in FORGES:
        raise ConfigError(f"--forge {chosen!r}: choose one of {', '.join(FORGES)}")
    local = Path(repo).expanduser()
    name = str(local.resolve()) if local.exists() else repo
    forge_url = commits is None and chosen != "local"
    asked = _Asked(
        url=clone or (_forge_url(config, chosen, repo) if forge_url else name),
        name=name,
        forge=chosen,
        commits=commits,
        merged=from_merged_prs,
        parallel=_parallel(config, parallel),
    )
    existing = read_tasks(out) if out.exists() and out.stat().st_size else []
    known = {task.instance_id for task in existing}
    tasks, left_out = _with_golem(config, lambda e, s: _make(config, e, s, asked, known))
    write_tasks(out, [*existing, *tasks])
    skipped = out.with_name(f"{out.stem}.left-out.jsonl")
    skipped.write_text("".join(json.dumps(item.__dict__) + "\n" for item in left_out))
    if json_output:
        listed = [{"instance_id": t.instance_id, "FAIL_TO_PASS": t.FAIL_TO_PASS} for t in tasks]
        left = [item.__dict__ for item in left_out]
        say_json({"tasks": listed, "left_out": left})
        return
    terminal().print(
        f"made {len(tasks)} task(s) in {out!s}; {len(left_out)} change(s) "
        f"left out, with why, in {skipped!s}"
    )


@dataclass(frozen=True)
class _Asked:
    """What `eval make` was asked to make tasks of."""

    url: str
    name: str
    forge: str
    commits: str | None
    merged: int | None
    parallel: int


async def _make(
    config: GolemConfig, engine: Engine, store: Store, asked: _Asked, known: set[str]
) -> tuple[list[EvalTask], list[LeftOut]]:
    """The tasks of the changes asked for (but those ``known`` already), and those left out."""
    from golem.eval import (
        Sources,
        TaskMaker,
        Testbed,
        from_commits,
        from_merged_pull_requests,
    )

    console = terminal(stderr=True)
    sources = Sources(config)
    source = await sources.get(asked.url)
    if asked.commits is not None:
        candidates = await from_commits(source, asked.name, asked.commits)
    else:
        assert asked.merged is not None
        candidates = await from_merged_pull_requests(
            config, store, asked.forge, asked.name, source, asked.merged
        )
    fresh = [c for c in candidates if c.instance_id not in known]
    console.print(f"{len(fresh)} change(s) to try ({len(candidates) - len(fresh)} already tasks)")
    root = config.state_dir / "eval" / "make"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as scratch:
        testbed = Testbed(config, engine, store, Path(scratch) / "blueprints")
        maker = TaskMaker(
            config, sources, testbed, Path(scratch), told=_told(console), parallel=asked.parallel
        )
        made = await maker.make(asked.url, asked.name, fresh)
    return made.tasks, made.left_out


def _forge_url(config: GolemConfig, forge: str, repo: str) -> str:
    """How a forge's repository ``owner/name`` is cloned (``[server.<forge>] repo_url``)."""
    trigger = config.server.gitlab if forge == "gitlab" else config.server.github
    template = trigger.repo_url
    if template is None and forge == "gitlab":
        template = f"{config.forge.gitlab.base_url.rstrip('/')}/{{repo}}.git"
    return (template or "https://github.com/{repo}.git").replace("{repo}", repo)


def _told(console: GolemConsole) -> Callable[[EvalTask | LeftOut], None]:
    from golem.eval import EvalTask

    def told(item: EvalTask | LeftOut) -> None:
        if isinstance(item, EvalTask):
            console.print(
                f"✓ {item.instance_id}: {len(item.FAIL_TO_PASS)} fail-to-pass, "
                f"{len(item.PASS_TO_PASS)} pass-to-pass"
            )
        else:
            console.print(f"- {item.instance_id}: left out: {item.reason}")

    return told


@eval_app.command("run")
def run_command(
    tasks_file: Path = typer.Argument(..., help="The task file (JSONL; SWE-bench's too)."),
    model: str = typer.Option(
        ..., "--model", help="provider/model, scripted:PATH ({instance_id} is the task's), or gold."
    ),
    attempts: int = typer.Option(1, "--attempts", help="Independent runs per task (pass@k)."),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="Dollars for each run."),
    total_usd: float | None = typer.Option(
        None, "--total-usd", help="Start no attempt once the evaluation has spent this."
    ),
    blueprint: str = typer.Option("minion", "--blueprint", help="A built-in blueprint or YAML."),
    parallel: int | None = typer.Option(
        None, "--parallel", help="Attempts at once (default: [server] max_runs)."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="The results directory (default: beside the task file)."
    ),
    label: str | None = typer.Option(None, "--label", help="How reports name this evaluation."),
    limit: int | None = typer.Option(
        None, "--limit", help="Run at most this many attempts now (the rest: a later run)."
    ),
    repo_url: str | None = typer.Option(
        None, "--repo-url", help="How to clone a task's owner/name ([server.github] repo_url)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Run golem's blueprint on every task, the hidden tests applied only after the agent is
    done; report per task and in total. Finished attempts are kept: run it again to resume."""
    from golem.agent import make_model
    from golem.eval import GOLD, EvalSettings, Evaluation, ResultsDir, read_tasks

    if attempts < 1 or (limit is not None and limit < 1):
        raise ConfigError("--attempts and --limit are counts: give 1 or more")
    config = _config(config_file)
    tasks = read_tasks(tasks_file)
    if model != GOLD and "{instance_id}" not in model:
        make_model(model, config.models)  # a model that cannot be made fails here, not per run
    template = repo_url or config.server.github.repo_url or "https://github.com/{repo}.git"
    results = ResultsDir(out or _default_out(tasks_file, model, blueprint))
    settings = results.begin(
        EvalSettings(
            tasks=str(tasks_file.resolve()),
            tasks_sha256=ResultsDir.digest(tasks_file),
            model=model,
            blueprint=blueprint,
            attempts=attempts,
            budget_usd=budget_usd,
            golem_version=__version__,
            label=label or "",
        )
    )
    console = terminal(stderr=True)

    async def work(engine: Engine, store: Store) -> str | None:
        evaluation = Evaluation(
            config,
            engine,
            store,
            tasks,
            results,
            settings,
            parallel=_parallel(config, parallel),
            repo_url=template,
            total_usd=total_usd,
            limit=limit,
            told=_attempted(console),
        )
        console.print(f"{len(evaluation.left())} attempt(s) to run in {results.path!s}")
        await evaluation.run()
        return evaluation.stopped

    stopped = _with_golem(config, work)
    _report(results, json_output)
    if stopped:
        console.print(f"stopped: {stopped}")


def _default_out(tasks: Path, model: str, blueprint: str) -> Path:
    words = re.sub(r"[^A-Za-z0-9]+", "-", f"{model}-{Path(blueprint).stem}").strip("-")
    return tasks.with_name(f"{tasks.stem}.{words[:80]}.eval")


def _attempted(console: GolemConsole) -> Callable[[Attempt], None]:

    def told(attempt: Attempt) -> None:
        name = f"{attempt.instance_id} #{attempt.attempt}"
        if attempt.not_run:
            console.print(f"- {name}: not run: {attempt.not_run}")
            return
        mark, said = ("✓", "resolved") if attempt.resolved else ("✗", "unresolved")
        console.print(
            f"{mark} {name}: {said} ({attempt.verdict}, ${attempt.cost_usd:.2f}, "
            f"{attempt.turns} turns, {attempt.seconds:.1f}s)"
        )

    return told


def _report(results: ResultsDir, json_output: bool) -> None:
    from golem.eval import build_report, print_report, report_html

    report = build_report(results)
    (results.path / "report.json").write_text(report.model_dump_json(indent=2))
    (results.path / "report.html").write_text(report_html(report), encoding="utf-8")
    if json_output:
        say_json(report.model_dump(mode="json", exclude={"attempts", "gold"}))
        return
    print_report(terminal(), report)
    terminal().print(f"report: {results.path / 'report.html'!s}")


@eval_app.command("report")
def report_command(
    results: Path = typer.Argument(..., help="A results directory of `golem eval run`."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Report an evaluation (finished or not): per task, in total, and how often golem's
    verification agreed with the hidden tests; also written as report.json and report.html."""
    from golem.eval import ResultsDir

    if not results.is_dir():
        raise EvalError(f"{results} is not a results directory of `golem eval run`")
    _report(ResultsDir(results), json_output)


@eval_app.command("compare")
def compare_command(
    a: Path = typer.Argument(..., help="A results directory."),
    b: Path = typer.Argument(..., help="Another, of the same tasks."),
    json_output: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    html: Path | None = typer.Option(None, "--html", help="Write the comparison's page here."),
) -> None:
    """Compare two evaluations of the same tasks (two models, two blueprints, two golem
    versions): task by task and in total, as a table, JSON or an HTML page with the diffs."""
    from golem.eval import (
        ResultsDir,
        build_report,
        compare,
        comparison_html,
        print_comparison,
    )

    for path in (a, b):
        if not path.is_dir():
            raise EvalError(f"{path} is not a results directory of `golem eval run`")
    comparison = compare(build_report(ResultsDir(a)), build_report(ResultsDir(b)))
    if html is not None:
        html.write_text(comparison_html(comparison), encoding="utf-8")
    if json_output:
        exclude = {"a": {"attempts", "gold"}, "b": {"attempts", "gold"}}
        say_json(comparison.model_dump(mode="json", exclude=exclude))
        return
    print_comparison(terminal(), comparison)
