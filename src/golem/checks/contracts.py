"""The checks' contracts: a repository's own commands for making its dependencies ready
and verifying a change (its conventions), and where each was found; and the result of
running one (``golem.core.check_results``, low enough for the forge that records a pull
request's checks)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from golem.core import HostNames
from golem.core.check_results import CheckResult, TestFailure, TestProgress

__all__ = [
    "CHECK_STEPS",
    "STEPS",
    "CheckResult",
    "DetectedCommand",
    "RepoConventions",
    "Service",
    "Step",
    "TestFailure",
    "TestProgress",
]

Step = Literal["install", "setup", "lint", "build", "test"]
STEPS: tuple[Step, ...] = ("install", "setup", "lint", "build", "test")
CHECK_STEPS: tuple[Step, ...] = ("lint", "build", "test")
"""The steps that verify a change (``install`` and ``setup`` only prepare the box)."""


class DetectedCommand(BaseModel):
    """One command of a repository's conventions and where it was found, for
    ``golem checks detect`` and the run's report."""

    model_config = ConfigDict(extra="forbid")

    step: Step
    command: str
    origin: str = Field(
        description="The file it came from (e.g. '.github/workflows/ci.yml', 'Makefile'), "
        "'.golem.toml', or 'ecosystem default'."
    )
    why: str = Field("", description="e.g. 'job test, step 3', 'target test', 'uv.lock'.")
    used: bool = Field(
        True,
        description="False: found but not run; ``why`` says why (a more trusted source "
        "names the step, or the command cannot run as written, e.g. a matrix expression).",
    )


class Service(BaseModel):
    """A container the repository's checks expect running beside them, as its CI declares
    it (a GitHub Actions job's ``services:``, GitLab CI's ``services:``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Its name in the CI file (GitLab: its alias).")
    image: str = Field(
        description="The image, expressions resolved as in ``run:`` lines; empty when only "
        "the CI runner knows it (``why`` says so)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Its environment, the values the CI file writes."
    )
    ports: list[int] = Field(
        default_factory=list,
        description="The ports it listens on inside its container (with the box's network "
        "shared: localhost:<port>).",
    )
    health: str | None = Field(None, description="Its health command (``--health-cmd``).")
    command: list[str] = Field(
        default_factory=list,
        description="The command it runs instead of its image's (GitLab's ``command``).",
    )
    origin: str = Field(description="The CI file it came from.")
    why: str = Field("", description="e.g. 'job test, service postgres'.")


class RepoConventions(BaseModel):
    """How a repository makes its dependencies ready and checks itself: from its
    ``.golem.toml``, or detected from its CI definitions, task runners and ecosystem."""

    model_config = ConfigDict(extra="forbid")

    install: list[str] = Field(
        default_factory=list,
        description="Dependency install commands: run once per install key in an install "
        "box that reaches the ecosystem's registries; what they make (``cache``) is kept.",
    )
    setup: list[str] = Field(
        default_factory=list,
        description="Commands run in the run's box before the agent, every run (offline).",
    )
    lint: list[str] = Field(default_factory=list)
    build: list[str] = Field(default_factory=list)
    test: list[str] = Field(default_factory=list)
    cache: list[str] = Field(
        default_factory=list,
        description="Paths that the install makes and later runs reuse: relative to the "
        "repository's root (e.g. 'node_modules'), or beneath golem's home, outside the "
        "checkout (e.g. '/tmp/golem/venv', '/tmp/golem/cargo').",
    )
    cache_keys: list[str] = Field(
        default_factory=list,
        description="Files whose content keys the install's cache (lockfiles, manifests), "
        "besides the files its commands name (golem.blueprint.install_inputs).",
    )
    registries: HostNames = Field(
        default_factory=list,
        description="Host names (or *.suffix globs, never regexes) the install may reach "
        "(the ecosystems' registries), e.g. 'pypi.org'.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment of every command of the run's boxes (e.g. the venv's PATH).",
    )
    ecosystems: list[str] = Field(
        default_factory=list, description="e.g. python, node, go, rust: what was recognised."
    )
    findings: list[DetectedCommand] = Field(
        default_factory=list, description="Each command with where it was found and why."
    )
    services: list[Service] = Field(
        default_factory=list,
        description="Containers the checks expect running beside them (the CI's services).",
    )
    compose: list[str] = Field(
        default_factory=list,
        description="Compose files the checks' CI job or task runner brings up (relative "
        "to the repository's root).",
    )
    containers: list[str] = Field(
        default_factory=list,
        description="Why the checks need a container engine, each in words (a service, a "
        "compose file, testcontainers among the test dependencies); empty: they do not.",
    )
    image: str | None = Field(None, description="The devbox image to run in, if named.")
    source: str = Field(description="Where these came from, for the run's report.")

    @property
    def verifies(self) -> bool:
        """Whether any command would verify a change (lint, build or test)."""
        return bool(self.lint or self.build or self.test)

    @property
    def needs_containers(self) -> bool:
        """Whether the checks need a container engine in their box."""
        return bool(self.containers)
