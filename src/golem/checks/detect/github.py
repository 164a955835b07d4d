"""GitHub Actions: the ``run:`` steps of the jobs that run on pushes and pull requests,
with matrix and env expressions resolved where the workflow writes their values; local
composite actions and reusable workflows are read where they are used.

Expressions in ``run:`` lines: ``${{ matrix.* }}`` and ``${{ env.* }}`` are resolved from
what the workflow writes; anything else is known only on the runner."""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golem.checks.contracts import Service, Step
from golem.checks.detect.ci import SKIPPED_NAMES, JobLines, job_of, read_lines
from golem.checks.detect.found import TRUST_CI, Candidate, Dropped, RepoFiles
from golem.checks.detect.python import PythonFacts
from golem.checks.detect.services import health_command, parse_ports
from golem.context import file_in_repo

__all__ = [
    "EXPRESSION",
    "SETUP_ACTIONS",
    "expand",
    "github_workflows",
    "literal_env",
    "matrix_of",
    "read_github",
]

WORKFLOWS = ".github/workflows"
MAX_WORKFLOWS = 64
MAX_DEPTH = 3
OTHER_PLATFORM = re.compile(
    r"==\s*['\"](windows|macos)|startsWith\([^,]+,\s*['\"](windows|macos)", re.IGNORECASE
)
CHECK_EVENTS = frozenset({"push", "pull_request", "pull_request_target", "merge_group"})
SETUP_ACTIONS = {
    "actions/setup-python": "python",
    "astral-sh/setup-uv": "python",
    "actions/setup-node": "node",
    "pnpm/action-setup": "node",
    "actions/setup-go": "go",
    "dtolnay/rust-toolchain": "rust",
    "actions-rs/toolchain": "rust",
}
RUFF_ACTION: tuple[Step, str, dict[str, str]] = ("lint", "ruff {args} {src}", {"args": "check"})
CHECK_ACTIONS: dict[str, tuple[Step, str, dict[str, str]]] = {
    "pre-commit/action": (
        "lint",
        "pre-commit run --show-diff-on-failure --color=always {extra_args}",
        {"extra_args": "--all-files"},
    ),
    "astral-sh/ruff-action": RUFF_ACTION,
    "chartboost/ruff-action": RUFF_ACTION,
    "psf/black": ("lint", "black {options} {src}", {"options": "--check --diff", "src": "."}),
}
"""Actions that run a check, as the command they run: a template over the step's
``with:`` inputs (their defaults when not given, or given as an expression)."""


def github_workflows(files: RepoFiles) -> list[str]:
    """The workflow files, sorted, as paths relative to the repository's root."""
    if not files.is_dir(".github") or not files.is_dir(WORKFLOWS):
        return []
    entries = os.scandir(files.root / WORKFLOWS)
    names = sorted(entry.name for entry in entries if entry.name.endswith((".yml", ".yaml")))
    rels = [f"{WORKFLOWS}/{name}" for name in names[:MAX_WORKFLOWS]]
    return [rel for rel in rels if file_in_repo(files.root, rel)]


def read_github(files: RepoFiles, facts: PythonFacts, ecosystems: list[str]) -> JobLines:
    """Candidates from every workflow that runs on pushes or pull requests; the
    ecosystems its setup actions name are appended to ``ecosystems``."""
    reader = _Reader(files, facts, ecosystems)
    for rel in github_workflows(files):
        workflow = files.yaml(rel)
        if (
            isinstance(workflow, dict)
            and _runs_on_changes(workflow)
            and not _skipped(rel, workflow)
        ):
            reader.workflow(rel, workflow, 0)
    return reader.found


@dataclass
class _Reader:
    files: RepoFiles
    facts: PythonFacts
    ecosystems: list[str]
    found: JobLines = field(default_factory=JobLines)

    def workflow(self, rel: str, workflow: dict[str, Any], depth: int) -> None:
        env = literal_env(workflow.get("env"), {})
        workdir = _workdir(workflow, "")
        jobs = workflow.get("jobs")
        for name, job in jobs.items() if isinstance(jobs, dict) else ():
            if not isinstance(job, dict) or not _is_check_job(str(name), job):
                continue
            called = _local(job.get("uses"))
            if "uses" not in job:
                self.job(rel, str(name), job, env, workdir)
            elif (
                called is not None
                and depth < MAX_DEPTH
                and isinstance(self.files.yaml(called), dict)
            ):
                self.workflow(called, self.files.yaml(called), depth + 1)

    def job(
        self, origin: str, name: str, job: dict[str, Any], env: dict[str, str], workdir: str
    ) -> None:
        context = _Job(origin, name, matrix_of(job), literal_env(job.get("env"), env))
        services = _services(context, job.get("services"))
        if services:
            self.found.services[job_of(origin, f"job {name}")] = services
        self.steps(context, job.get("steps"), _workdir(job, workdir), "", 0)

    def steps(self, job: _Job, steps: Any, workdir: str, prefix: str, depth: int) -> None:
        for number, step in enumerate(steps if isinstance(steps, list) else [], start=1):
            if not isinstance(step, dict) or SKIPPED_NAMES.search(str(step.get("name", ""))):
                continue
            if OTHER_PLATFORM.search(str(step.get("if", ""))):
                continue  # only on Windows or macOS runners
            where = f"job {job.name}, step {prefix}{number}"
            uses = str(step.get("uses", "")).split("@", 1)[0]
            if uses:
                self.action(job, uses, step.get("with"), where, workdir, depth)
            else:
                self.run(job, step, where, workdir)

    def action(
        self, job: _Job, uses: str, inputs: Any, where: str, workdir: str, depth: int
    ) -> None:
        if uses in SETUP_ACTIONS and SETUP_ACTIONS[uses] not in self.ecosystems:
            self.ecosystems.append(SETUP_ACTIONS[uses])
        if uses in CHECK_ACTIONS:
            step, template, defaults = CHECK_ACTIONS[uses]
            command = _action_command(template, defaults, inputs)
            why, ci_job = f"{where}: {uses}", job_of(job.origin, where)
            self.found.candidates.append(
                Candidate(step, command, job.origin, why, TRUST_CI, job=ci_job)
            )
        composite = self.composite(uses) if depth < MAX_DEPTH else None
        if composite is not None:
            prefix = where.rsplit("step ", 1)[1] + "."
            self.steps(job, composite, workdir, prefix, depth + 1)

    def composite(self, uses: str) -> list[Any] | None:
        """The steps of a local composite action (``uses: ./.github/actions/setup``)."""
        directory = _local(uses)
        for name in ("action.yml", "action.yaml") if directory is not None else ():
            action = self.files.yaml(f"{directory}/{name}")
            runs = action.get("runs") if isinstance(action, dict) else None
            if isinstance(runs, dict) and runs.get("using") == "composite":
                steps = runs.get("steps")
                return steps if isinstance(steps, list) else None
        return None

    def run(self, job: _Job, step: dict[str, Any], where: str, workdir: str) -> None:
        run, shell = step.get("run"), str(step.get("shell", "bash"))
        if not isinstance(run, str) or shell.split(maxsplit=1)[0] in ("pwsh", "powershell", "cmd"):
            return
        env = literal_env(step.get("env"), job.env)
        cwd = str(step.get("working-directory", workdir))
        for script, why in expand(run, job.matrix, env):
            if why:
                self.drop(script, job.origin, f"{where}: {why}")
            else:
                read_lines(
                    script,
                    origin=job.origin,
                    where=where,
                    workdir=cwd,
                    env=env,
                    facts=self.facts,
                    found=self.found,
                )

    def drop(self, script: str, origin: str, why: str) -> None:
        """Record a line that cannot run as written, with the step it would have been."""
        probe = JobLines()
        read_lines(
            EXPRESSION.sub("X", script),
            origin=origin,
            where="",
            workdir="",
            env={},
            facts=self.facts,
            found=probe,
        )
        for candidate in probe.candidates[:1]:
            self.found.dropped.append((Dropped(script.strip(), origin, why), candidate.step))


@dataclass(frozen=True)
class _Job:
    origin: str
    name: str
    matrix: dict[str, list[str]]
    env: dict[str, str]


def _services(job: _Job, declared: Any) -> list[Service]:
    """A job's ``services:``: image and env with their expressions resolved as a ``run:``
    line's are (an image only the runner knows is left empty, with why; such an env
    value is left out), ports, and the health command of their docker options."""
    services: list[Service] = []
    for name, written_service in declared.items() if isinstance(declared, dict) else ():
        service = (
            {"image": written_service} if isinstance(written_service, str) else written_service
        )
        if not isinstance(service, dict) or not service.get("image"):
            continue
        why = f"job {job.name}, service {name}"
        image, unknown = expand(str(service["image"]), job.matrix, job.env)[0]
        if unknown:
            image, why = "", f"{why}: its image {unknown}"
        env: dict[str, str] = {}
        written = service.get("env")
        for key, value in written.items() if isinstance(written, dict) else ():
            text = str(value).lower() if isinstance(value, bool) else str(value or "")
            resolved, unknown_value = expand(text, job.matrix, job.env)[0]
            if not unknown_value:
                env[str(key)] = resolved
        services.append(
            Service(
                name=str(name),
                image=image,
                env=env,
                ports=parse_ports(service.get("ports")),
                health=health_command(service.get("options")),
                origin=job.origin,
                why=why,
            )
        )
    return services


def _action_command(template: str, defaults: dict[str, str], inputs: Any) -> str:
    given = inputs if isinstance(inputs, dict) else {}
    values = {}
    for name in re.findall(r"\{(\w+)\}", template):
        value = given.get(name)
        usable = isinstance(value, str) and "${{" not in value
        values[name] = str(value) if usable else defaults.get(name, "")
    return " ".join(template.format(**values).split())


def _local(uses: Any) -> str | None:
    """The repository path a ``uses: ./path`` names (None for anything else)."""
    if not isinstance(uses, str) or not uses.startswith("./"):
        return None
    path = os.path.normpath(uses.split("@", 1)[0])
    return None if path.startswith("..") else path


def _skipped(rel: str, workflow: dict[str, Any]) -> bool:
    """A release or deploy workflow, whatever its triggers."""
    return bool(
        SKIPPED_NAMES.search(Path(rel).stem) or SKIPPED_NAMES.search(str(workflow.get("name", "")))
    )


def _runs_on_changes(workflow: dict[str, Any]) -> bool:
    on: Any = True  # YAML 1.1 reads a bare `on` key as true
    triggers = workflow.get("on", workflow.get(on))
    if triggers is None:
        return True
    if isinstance(triggers, str):
        triggers = [triggers]
    if not isinstance(triggers, list | dict):
        return False
    return bool(CHECK_EVENTS & {str(t) for t in triggers})


def _is_check_job(name: str, job: dict[str, Any]) -> bool:
    if SKIPPED_NAMES.search(name) or SKIPPED_NAMES.search(str(job.get("name", ""))):
        return False
    runs_on = str(job.get("runs-on", "ubuntu"))
    if re.search(r"windows|macos", runs_on) and "ubuntu" not in runs_on:
        return False
    condition = str(job.get("if", ""))
    return not (
        re.search(r"refs/tags|release|deploy|publish", condition)
        or OTHER_PLATFORM.search(condition)
    )


def _workdir(holder: dict[str, Any], outer: str) -> str:
    defaults = holder.get("defaults")
    run = defaults.get("run") if isinstance(defaults, dict) else None
    value = run.get("working-directory") if isinstance(run, dict) else None
    return str(value) if isinstance(value, str) and "${{" not in value else outer


EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
ANY_VALUE = re.compile(r"(version|python|node|go|rust|toolchain|os|platform|runner)", re.IGNORECASE)
"""Matrix keys whose every value runs the same checks: the first value stands for all."""
MAX_MATRIX = 8


def expand(run: str, matrix: dict[str, list[str]], env: dict[str, str]) -> list[tuple[str, str]]:
    """``run`` with its expressions resolved: one script per value of a matrix key that
    changes what runs; (script, why) with a reason when it cannot be resolved."""
    keys = list(dict.fromkeys(EXPRESSION.findall(run)))
    choices: list[list[tuple[str, str]]] = []
    for key in keys:
        values = _values(key, matrix, env)
        if values is None:
            return [(run, f"uses ${{{{ {key} }}}}, known only on the CI runner")]
        choices.append([(key, value) for value in values])
    scripts = []
    for combination in itertools.islice(itertools.product(*choices), MAX_MATRIX):
        script = run
        for key, value in combination:
            pattern = r"\$\{\{\s*" + re.escape(key) + r"\s*\}\}"
            script = re.sub(pattern, value.replace("\\", "\\\\"), script)
        scripts.append((script, ""))
    return scripts


def _values(key: str, matrix: dict[str, list[str]], env: dict[str, str]) -> list[str] | None:
    scope, _, name = key.partition(".")
    if scope == "env" and name in env:
        return [env[name]]
    if scope != "matrix" or name not in matrix or not matrix[name]:
        return None
    values = matrix[name]
    return values[:1] if ANY_VALUE.search(name) else values


def matrix_of(job: dict[str, Any]) -> dict[str, list[str]]:
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if not isinstance(matrix, dict):
        return {}
    found: dict[str, list[str]] = {}
    for key, values in matrix.items():
        if isinstance(values, list):
            found[str(key)] = [str(v) for v in values if isinstance(v, str | int | float)]
    include = matrix.get("include")
    for entry in include if isinstance(include, list) else []:
        for key, value in entry.items() if isinstance(entry, dict) else ():
            if isinstance(value, str | int | float) and str(value) not in found.setdefault(
                str(key), []
            ):
                found[str(key)].append(str(value))
    return found


def literal_env(value: Any, outer: dict[str, str]) -> dict[str, str]:
    env = dict(outer)
    for key, item in value.items() if isinstance(value, dict) else ():
        if item is None:  # `KEY:` with nothing after it is the empty string
            env[str(key)] = ""
        elif isinstance(item, str | int | float | bool) and "${{" not in str(item):
            env[str(key)] = str(item).lower() if isinstance(item, bool) else str(item)
    return env
