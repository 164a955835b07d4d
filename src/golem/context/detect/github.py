"""GitHub Actions: the ``run:`` steps of the jobs that run on pushes and pull requests,
with matrix and env expressions resolved where the workflow writes their values."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

from golem.context.contracts import Step
from golem.context.detect.ci import SKIPPED_NAMES, JobLines, job_of, read_lines
from golem.context.detect.found import TRUST_CI, Candidate, Dropped, RepoFiles
from golem.context.detect.python import PythonFacts
from golem.context.files import file_in_repo

__all__ = ["SETUP_ACTIONS", "github_workflows", "read_github"]

WORKFLOWS = ".github/workflows"
CHECK_EVENTS = frozenset({"push", "pull_request", "pull_request_target", "merge_group"})
SETUP_ACTIONS = {
    "actions/setup-python": "python", "astral-sh/setup-uv": "python",
    "actions/setup-node": "node", "pnpm/action-setup": "node",
    "actions/setup-go": "go", "dtolnay/rust-toolchain": "rust", "actions-rs/toolchain": "rust",
}  # fmt: skip
CHECK_ACTIONS: dict[str, tuple[Step, str]] = {
    "pre-commit/action": ("lint", "pre-commit run --all-files")
}
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
ANY_VALUE = re.compile(r"(version|python|node|go|rust|toolchain|os|platform|runner)", re.IGNORECASE)
MAX_MATRIX = 8


def github_workflows(files: RepoFiles) -> list[str]:
    """The workflow files, sorted, as paths relative to the repository's root."""
    directory = files.root / WORKFLOWS
    if not files.is_dir(".github") or not files.is_dir(WORKFLOWS):
        return []
    names = sorted(
        entry.name for entry in os.scandir(directory) if entry.name.endswith((".yml", ".yaml"))
    )
    return [
        f"{WORKFLOWS}/{name}" for name in names if file_in_repo(files.root, f"{WORKFLOWS}/{name}")
    ]


def read_github(files: RepoFiles, facts: PythonFacts, ecosystems: list[str]) -> JobLines:
    """Candidates from every workflow that runs on pushes or pull requests; the
    ecosystems its setup actions name are appended to ``ecosystems``."""
    found = JobLines()
    for rel in github_workflows(files):
        workflow = files.yaml(rel)
        if not isinstance(workflow, dict) or not _runs_on_changes(workflow):
            continue
        if SKIPPED_NAMES.search(Path(rel).stem) or SKIPPED_NAMES.search(
            str(workflow.get("name", ""))
        ):
            continue  # a release or deploy workflow, whatever its triggers
        env = _literal_env(workflow.get("env"), {})
        workdir = _workdir(workflow, "")
        jobs = workflow.get("jobs")
        for name, job in jobs.items() if isinstance(jobs, dict) else ():
            if isinstance(job, dict) and _is_check_job(str(name), job):
                _read_job(rel, str(name), job, env, workdir, facts, found, ecosystems)
    return found


def _read_job(
    origin: str, name: str, job: dict[str, Any], env: dict[str, str], workdir: str,
    facts: PythonFacts, found: JobLines, ecosystems: list[str],
) -> None:  # fmt: skip
    matrix = _matrix(job)
    job_env = _literal_env(job.get("env"), env)
    job_dir = _workdir(job, workdir)
    steps = job.get("steps")
    for number, step in enumerate(steps if isinstance(steps, list) else [], start=1):
        if not isinstance(step, dict) or SKIPPED_NAMES.search(str(step.get("name", ""))):
            continue
        where = f"job {name}, step {number}"
        uses = str(step.get("uses", "")).split("@", 1)[0]
        if uses:
            _read_action(uses, origin, where, found, ecosystems)
            continue
        run, shell = step.get("run"), str(step.get("shell", "bash"))
        if not isinstance(run, str) or shell.split(maxsplit=1)[0] in ("pwsh", "powershell", "cmd"):
            continue
        step_env = _literal_env(step.get("env"), job_env)
        cwd = str(step.get("working-directory", job_dir))
        for script, why in _expand(run, matrix, step_env):
            if why:
                _drop(script, origin, f"{where}: {why}", cwd, facts, found)
            else:
                read_lines(
                    script, origin=origin, where=where, workdir=cwd, env=step_env,
                    facts=facts, found=found,
                )  # fmt: skip


def _read_action(
    uses: str, origin: str, where: str, found: JobLines, ecosystems: list[str]
) -> None:
    if uses in SETUP_ACTIONS and SETUP_ACTIONS[uses] not in ecosystems:
        ecosystems.append(SETUP_ACTIONS[uses])
    if uses in CHECK_ACTIONS:
        step, command = CHECK_ACTIONS[uses]
        why, job = f"{where}: {uses}", job_of(origin, where)
        found.candidates.append(Candidate(step, command, origin, why, TRUST_CI, job=job))


def _drop(
    script: str, origin: str, why: str, cwd: str, facts: PythonFacts, found: JobLines
) -> None:
    probe = JobLines()
    read_lines(
        EXPRESSION.sub("X", script),
        origin=origin,
        where="",
        workdir="",
        env={},
        facts=facts,
        found=probe,
    )
    for candidate in probe.candidates:
        found.dropped.append((Dropped(script.strip(), origin, why), candidate.step))
        break


def _expand(run: str, matrix: dict[str, list[str]], env: dict[str, str]) -> list[tuple[str, str]]:
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


def _matrix(job: dict[str, Any]) -> dict[str, list[str]]:
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


def _runs_on_changes(workflow: dict[str, Any]) -> bool:
    on: Any = True  # YAML 1.1 reads a bare `on` key as true
    triggers = workflow.get("on", workflow.get(on))
    if triggers is None:
        return True
    if isinstance(triggers, str):
        triggers = [triggers]
    return bool(CHECK_EVENTS & {str(t) for t in triggers})


def _is_check_job(name: str, job: dict[str, Any]) -> bool:
    if (
        "uses" in job
        or SKIPPED_NAMES.search(name)
        or SKIPPED_NAMES.search(str(job.get("name", "")))
    ):
        return False
    runs_on = str(job.get("runs-on", "ubuntu"))
    if re.search(r"windows|macos", runs_on) and "ubuntu" not in runs_on:
        return False
    return not re.search(r"refs/tags|release|deploy|publish", str(job.get("if", "")))


def _literal_env(value: Any, outer: dict[str, str]) -> dict[str, str]:
    env = dict(outer)
    for key, item in value.items() if isinstance(value, dict) else ():
        if item is None:  # `KEY:` with nothing after it is the empty string
            env[str(key)] = ""
        elif isinstance(item, str | int | float | bool) and "${{" not in str(item):
            env[str(key)] = str(item).lower() if isinstance(item, bool) else str(item)
    return env


def _workdir(holder: dict[str, Any], outer: str) -> str:
    defaults = holder.get("defaults")
    run = defaults.get("run") if isinstance(defaults, dict) else None
    value = run.get("working-directory") if isinstance(run, dict) else None
    return str(value) if isinstance(value, str) and "${{" not in value else outer
