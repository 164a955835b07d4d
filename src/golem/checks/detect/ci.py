"""Reading one CI job's shell lines into candidates: variables resolved where their value
is written in the CI file, lines that cannot run as written dropped with the reason."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from golem.checks.contracts import Service, Step
from golem.checks.detect.classify import AUTOFIX_WHY, classify, script_lines
from golem.checks.detect.found import TRUST_CI, TRUST_LAST, Candidate, Dropped
from golem.checks.detect.python import PythonFacts
from golem.checks.detect.services import compose_invoked

__all__ = ["SKIPPED_NAMES", "JobLines", "job_of", "read_lines"]

SKIPPED_NAMES = re.compile(
    r"(deploy|publish|release|upload|pages|docs?\b|benchmark|pypi)", re.IGNORECASE
)
"""Jobs and steps with these in their name are never checks."""
SHELL_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


@dataclass
class JobLines:
    """What a CI job's lines gave: commands by step, and lines dropped with why."""

    candidates: list[Candidate] = field(default_factory=list)
    dropped: list[tuple[Dropped, Step]] = field(default_factory=list)
    """Each with the step it would have been."""
    services: dict[str, list[Service]] = field(default_factory=dict)
    """Each job's (``job_of``) service containers."""
    compose: dict[str, list[str]] = field(default_factory=dict)
    """Each job's compose files, brought up by one of its lines."""


def read_lines(
    script: str,
    *,
    origin: str,
    where: str,
    workdir: str,
    env: dict[str, str],
    facts: PythonFacts,
    found: JobLines,
) -> None:
    """Classify each line of ``script`` into ``found``; ``where`` names the job and step."""
    for cwd, written in script_lines(script, workdir):
        line = _substitute(written, env)
        brought_up = compose_invoked(line, cwd, facts.files)
        if brought_up:
            found.compose.setdefault(job_of(origin, where), []).extend(brought_up)
        unknown = _runner_variable(line)
        result = classify(line, cwd, facts)
        if unknown and result.step is not None:
            why = f"{where}: uses ${unknown}, known only on the CI runner"
            found.dropped.append((Dropped(line, origin, why), result.step))
            continue
        if result.step is None:
            if AUTOFIX_WHY in result.why:  # shown as a lint left out, with why
                found.dropped.append((Dropped(line, origin, f"{where}: {result.why}"), "lint"))
            continue
        trust = TRUST_LAST if result.weak else TRUST_CI
        why = f"{where}: {result.why}" if result.why else where
        for command in result.commands:
            found.candidates.append(
                Candidate(
                    result.step,
                    command,
                    origin,
                    why,
                    trust,
                    result.ecosystem,
                    result.directory,
                    job_of(origin, where),
                )
            )


def job_of(origin: str, where: str) -> str:
    """The job a step's ``where`` ("job test, step 3") names, with its CI file."""
    return f"{origin}#{where.split(',', 1)[0]}" if where else ""


def _substitute(line: str, env: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        return env.get(name, match[0])

    return SHELL_VARIABLE.sub(value, line)


def _runner_variable(line: str) -> str | None:
    for match in SHELL_VARIABLE.finditer(line):
        name = match[1] or match[2]
        if name.startswith(("GITHUB_", "RUNNER_", "CI_", "INPUT_")):
            return name
    return None
