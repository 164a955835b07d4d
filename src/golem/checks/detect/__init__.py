"""Detecting a repository's commands the way its own CI finds them, by reading its files
(never running them).

Sources, in order of trust; for each step the most trusted source that names a command
wins (``merge.py``):

1. CI definitions: GitHub Actions workflows (``github.py``), GitLab CI (``gitlab.py``);
2. task runners: Makefile, justfile, ``package.json`` scripts, pre-commit (``runners.py``);
3. ecosystem defaults: pytest or unittest discovery, ``go test ./...``, ``cargo test``, the
   install by lockfile (``defaults.py``, ``python.py``);
4. tox and nox, which build their own environments at check time (a network the checks
   do not have).

What the chosen checks need running beside them (their CI job's services, compose files,
container libraries among the dependencies: ``services.py``) comes with them.

Installs go the ecosystem's way (a venv in golem's home ``/tmp/golem``, outside the
checkout, ``npm ci`` by lockfile, cargo's and go's caches in golem's home): every source's
install commands for an ecosystem run, the CI's first (a CI job's only when a chosen check
comes from that job), then the tools the checks run that no install names (``nodetools.py``
for pnpm and yarn).
``.golem.toml`` (``conventions.py``) wins over all of this.
"""

from __future__ import annotations

from pathlib import Path

from golem.checks.contracts import RepoConventions, Step
from golem.checks.detect.defaults import ecosystem_defaults, recognise
from golem.checks.detect.found import RepoFiles
from golem.checks.detect.github import read_github
from golem.checks.detect.gitlab import read_gitlab
from golem.checks.detect.merge import check_jobs, checks_served, merge
from golem.checks.detect.python import read_python
from golem.checks.detect.runners import read_runners
from golem.checks.detect.services import with_services

__all__ = ["checks_served", "detect_conventions", "recognise_ecosystems"]


def detect_conventions(repo: Path) -> RepoConventions:
    """The conventions ``repo``'s files imply; with nothing to verify, ``source`` says
    what was looked at."""
    files = RepoFiles(Path(repo))
    facts = read_python(files)
    ecosystems = recognise(files, facts)
    github = read_github(files, facts, ecosystems)
    gitlab = read_gitlab(files, facts)
    candidates = [*github.candidates, *gitlab.candidates, *read_runners(files, facts)]
    for candidate in candidates:
        if candidate.ecosystem and candidate.ecosystem not in ecosystems:
            ecosystems.append(candidate.ecosystem)
    candidates += ecosystem_defaults(files, facts, ecosystems)
    conventions = merge(files, facts, ecosystems, candidates, [*github.dropped, *gitlab.dropped])
    steps: dict[Step, list[str]] = {
        "lint": conventions.lint,
        "build": conventions.build,
        "test": conventions.test,
    }
    return with_services(
        files,
        conventions,
        check_jobs(candidates, steps),
        {**github.services, **gitlab.services},
        {**github.compose, **gitlab.compose},
    )


def recognise_ecosystems(repo: Path) -> list[str]:
    """The ecosystems ``repo`` is (python, node, go, rust), by its files."""
    files = RepoFiles(Path(repo))
    return recognise(files, read_python(files))
