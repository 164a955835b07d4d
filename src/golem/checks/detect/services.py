"""What the checks need running beside them: the containers a CI job declares
(GitHub Actions' and GitLab CI's ``services:``), compose files a CI step or a task
runner's recipe brings up, and container libraries among the declared dependencies
(testcontainers, a docker SDK). Only a CI job a chosen check comes from counts, and only
a recipe a chosen check runs."""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any

from golem.checks.contracts import RepoConventions, Service
from golem.checks.detect.found import RepoFiles, table
from golem.checks.detect.pydeps import REQUIREMENTS, declared_names
from golem.checks.detect.recipes import recipe

__all__ = [
    "COMPOSE_FILES",
    "compose_invoked",
    "container_libraries",
    "gitlab_services",
    "health_command",
    "parse_ports",
    "with_services",
]

COMPOSE = re.compile(r"^(?:sudo\s+)?(?:docker\s+compose|docker-compose|podman-compose)(?:\s|$)")
COMPOSE_FILES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")
"""The files compose reads when no ``-f`` names one, in its order."""
PYTHON_LIBRARIES = re.compile(r"^(?:docker|testcontainers(?:-[\w.-]+)?|pytest-docker[\w-]*)$")
NODE_LIBRARIES = re.compile(r"^(?:testcontainers|@testcontainers/.+|dockerode)$")
GO_LIBRARIES = re.compile(r"github\.com/(?:testcontainers/testcontainers-go|ory/dockertest)\b")
RUNNERS = frozenset({"make", "just"})
MAX_PREREQUISITES = 3


def compose_invoked(line: str, cwd: str, files: RepoFiles) -> list[str]:
    """The compose files a shell ``line`` run in ``cwd`` brings up (none when it runs no
    compose): those ``-f`` names, else the first of ``COMPOSE_FILES`` there."""
    if not COMPOSE.match(line):
        return []
    try:
        words = shlex.split(line)
    except ValueError:
        return []
    named: list[str] = []
    for at, word in enumerate(words):
        if word in ("-f", "--file") and at + 1 < len(words):
            named.append(words[at + 1])
        elif word.startswith("--file="):
            named.append(word.split("=", 1)[1])
    paths = [posixpath.normpath(posixpath.join(cwd, name)) for name in named]
    if not named:
        defaults = [posixpath.join(cwd, name) if cwd else name for name in COMPOSE_FILES]
        paths = next(([path] for path in defaults if files.exists(path)), [])
    return [path for path in paths if not path.startswith("..") and "$" not in path]


def parse_ports(value: Any) -> list[int]:
    """The container ports of a GitHub Actions ``ports:`` list ("5432:5432", 6379,
    "8080/tcp"): each mapping's container side."""
    ports: list[int] = []
    for entry in value if isinstance(value, list) else []:
        text = str(entry).split("/", 1)[0].rsplit(":", 1)[-1].strip()
        if text.isdigit() and 0 < int(text) < 65536 and int(text) not in ports:
            ports.append(int(text))
    return ports


def health_command(options: Any) -> str | None:
    """The ``--health-cmd`` of a service's docker ``options``."""
    try:
        words = shlex.split(options) if isinstance(options, str) else []
    except ValueError:
        return None
    for at, word in enumerate(words):
        if word == "--health-cmd" and at + 1 < len(words):
            return words[at + 1]
        if word.startswith("--health-cmd="):
            return word.split("=", 1)[1]
    return None


def gitlab_services(value: Any, job: str) -> list[Service]:
    """A GitLab CI ``services:`` list: each an image string, or a mapping with ``name``
    (the image), ``alias`` and ``variables``."""
    services: list[Service] = []
    for entry in value if isinstance(value, list) else []:
        mapping = entry if isinstance(entry, dict) else {"name": entry}
        image = mapping.get("name")
        if not isinstance(image, str) or not image:
            continue
        alias = mapping.get("alias")
        name = alias if isinstance(alias, str) and alias else _image_name(image)
        variables = mapping.get("variables")
        env = {
            str(key): str(item)
            for key, item in (variables.items() if isinstance(variables, dict) else ())
            if isinstance(item, str | int | float)
        }
        why = f"job {job}, service {name}"
        command = mapping.get("command")
        argv = [str(word) for word in command] if isinstance(command, list) else []
        services.append(
            Service(name=name, image=image, env=env, command=argv, origin=".gitlab-ci.yml", why=why)
        )
    return services


def with_services(
    files: RepoFiles,
    conventions: RepoConventions,
    chosen_jobs: set[str],
    services: dict[str, list[Service]],
    compose: dict[str, list[str]],
) -> RepoConventions:
    """``conventions`` with the services and compose files of the CI jobs the chosen
    checks come from (``chosen_jobs``) and of the task runner recipes they run, and why
    they need containers."""
    needed: list[Service] = []
    for job, declared in services.items():
        if job in chosen_jobs:
            needed += [s for s in declared if (s.name, s.image) not in _keys(needed)]
    files_up = [path for job, paths in compose.items() if job in chosen_jobs for path in paths]
    checks = [*conventions.lint, *conventions.build, *conventions.test]
    files_up += [path for command in checks for path in _recipe_compose(files, command)]
    files_up = list(dict.fromkeys(files_up))
    reasons = [f"service {s.name} ({s.origin}, {s.why.split(',', 1)[0]})" for s in needed]
    reasons += [f"compose file {path}" for path in files_up]
    reasons += [f"{name} among the declared dependencies" for name in container_libraries(files)]
    return conventions.model_copy(
        update={"services": needed, "compose": files_up, "containers": reasons}
    )


def container_libraries(files: RepoFiles) -> list[str]:
    """The container libraries (testcontainers, a docker SDK) the project declares, by
    name: its tests start containers themselves."""
    python = set[str]().union(
        *(declared_names(files, rel) for rel in ("pyproject.toml", *REQUIREMENTS))
    )
    package = files.json("package.json")
    node = {*table(package, "dependencies"), *table(package, "devDependencies")}
    go = set(GO_LIBRARIES.findall(files.text("go.mod") or ""))
    found = [name for name in python if PYTHON_LIBRARIES.match(name)]
    found += [name for name in node if NODE_LIBRARIES.match(name)]
    found += [f"github.com/{name}" for name in go]
    return sorted(found)


def _recipe_compose(files: RepoFiles, command: str) -> list[str]:
    """The compose files ``make T``/``just T`` brings up: in T's recipe or a recipe of
    its prerequisites (a few levels down)."""
    words = command.split()
    if not words or words[0] not in RUNNERS:
        return []
    tool = words[0]
    targets = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
    found: list[str] = []
    seen: set[str] = set()

    def visit(target: str, depth: int) -> None:
        if target in seen or depth > MAX_PREREQUISITES:
            return
        seen.add(target)
        prerequisites, lines = recipe(files, tool, target)
        for prerequisite in prerequisites:
            visit(prerequisite, depth + 1)
        for line in lines or []:
            found.extend(compose_invoked(line, "", files))

    for target in targets:
        visit(target, 0)
    return found


def _keys(services: list[Service]) -> set[tuple[str, str]]:
    return {(s.name, s.image) for s in services}


def _image_name(image: str) -> str:
    return image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]
