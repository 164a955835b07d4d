"""A repository's own install, setup, lint, build and test commands, what its install
keeps, and its devbox image.

``.golem.toml`` in the repository's root says them; when it is there it wins entirely (a
step it leaves out has no command: golem never mixes the file with guesses). Without it,
they are detected from the repository's CI definitions, task runners and ecosystem
(``detect/``). Nothing is run for either: files are only read. ``render_conventions``
writes conventions back as a ``.golem.toml`` that loads to the same.

```toml
image = "golem/python:3.11"           # optional: the devbox image to run in

[commands]                            # each a string or a list of strings
install = ["python3 -m venv /tmp/golem/venv", "/tmp/golem/venv/bin/pip install -e '.[dev]'"]
lint = ["ruff check .", "mypy"]
test = "python3 -m pytest -q"

[dependencies]                        # what the install makes, keyed by what, from where
cache = ["/tmp/golem/venv"]           # in the repository, or beneath golem's home /tmp/golem
keys = ["pyproject.toml"]
registries = ["pypi.org", "files.pythonhosted.org"]  # host names or *.suffix globs

[env]                                 # the environment of every command
VIRTUAL_ENV = "/tmp/golem/venv"
PATH = "/tmp/golem/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
```
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from golem.checks.contracts import STEPS, DetectedCommand, RepoConventions
from golem.checks.detect import detect_conventions, recognise_ecosystems
from golem.context import file_in_repo, read_bytes
from golem.core import ConfigError, HostNames
from golem.core.spec import GOLEM_HOME, check_env

__all__ = ["CONVENTIONS_FILE", "ConventionsFile", "load_conventions", "render_conventions"]

CONVENTIONS_FILE = ".golem.toml"
"""The file, in the repository's root, that names its commands."""

MAX_FILE_BYTES = 64 * 1024
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _no_blank(commands: list[str]) -> list[str]:
    stripped = [command.strip() for command in commands]
    if any(not command for command in stripped):
        raise ValueError("a command is empty; remove it or write the command")
    return stripped


def _cache_paths(paths: list[str]) -> list[str]:
    """Cache paths: relative to the repository's root, or beneath golem's home."""
    home = f"{GOLEM_HOME}/"
    _relative_paths([path[len(home) :] if path.startswith(home) else path for path in paths])
    return paths


def _relative_paths(paths: list[str]) -> list[str]:
    for path in paths:
        normal = posixpath.normpath(path) if path else ""
        if not path or path.startswith("/") or normal == "." or normal.split("/")[0] == "..":
            raise ValueError(
                f"{path!r} is not a path inside the repository; write it relative to its root"
            )
    return paths


def _environment(env: dict[str, str]) -> dict[str, str]:
    bad = [name for name in env if not ENV_NAME.match(name)]
    if bad:
        raise ValueError(f"{bad[0]!r} is not an environment variable name (letters, digits, _)")
    check_env(env)
    return env


Commands = Annotated[list[str], BeforeValidator(_as_list), AfterValidator(_no_blank)]
Paths = Annotated[list[str], AfterValidator(_relative_paths)]
CachePaths = Annotated[list[str], AfterValidator(_cache_paths)]


class CommandsTable(BaseModel):
    """``[commands]``: each step as one command or a list run in order."""

    model_config = ConfigDict(extra="forbid")

    install: Commands = Field(default_factory=list)
    setup: Commands = Field(default_factory=list)
    lint: Commands = Field(default_factory=list)
    build: Commands = Field(default_factory=list)
    test: Commands = Field(default_factory=list)


class DependenciesTable(BaseModel):
    """``[dependencies]``: what the install makes and keeps, and what it may reach."""

    model_config = ConfigDict(extra="forbid")

    cache: CachePaths = Field(default_factory=list)
    keys: Paths = Field(default_factory=list)
    registries: HostNames = Field(default_factory=list)


class ConventionsFile(BaseModel):
    """The whole of ``.golem.toml``."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = Field(None, min_length=1, description="The devbox image to run in.")
    commands: CommandsTable = Field(default_factory=CommandsTable)
    dependencies: DependenciesTable = Field(default_factory=DependenciesTable)
    env: Annotated[dict[str, str], AfterValidator(_environment)] = Field(default_factory=dict)


def load_conventions(repo: str | os.PathLike[str]) -> RepoConventions:
    """The conventions of the checked-out ``repo``: its ``.golem.toml`` when there is one,
    otherwise what its CI, task runners and ecosystem say; with nothing to verify when
    nothing names a check (``source`` says so). A ``ConfigError`` naming the file when
    ``.golem.toml`` is invalid."""
    root = Path(repo)
    path = root / CONVENTIONS_FILE
    if not os.path.lexists(path):
        return detect_conventions(root)
    real = file_in_repo(root, CONVENTIONS_FILE)
    if real is None:
        raise ConfigError(
            f"{path} is not a regular file inside the repository (a symlink out of it, or "
            "a directory); make it a plain file, or remove it to let golem detect commands"
        )
    parsed = _parse(path, real)
    commands = parsed.commands
    findings = [
        DetectedCommand(
            step=step, command=command, origin=CONVENTIONS_FILE, why=f"[commands] {step}"
        )
        for step in STEPS
        for command in getattr(commands, step)
    ]
    return RepoConventions(
        **{step: getattr(commands, step) for step in STEPS},
        cache=parsed.dependencies.cache,
        cache_keys=parsed.dependencies.keys,
        registries=parsed.dependencies.registries,
        env=parsed.env,
        ecosystems=recognise_ecosystems(root),
        findings=findings,
        image=parsed.image,
        source=f"from {CONVENTIONS_FILE}",
    )


def render_conventions(conventions: RepoConventions) -> str:
    """``conventions`` as a ``.golem.toml`` that loads to the same commands, dependencies,
    environment and image."""
    lines = [
        "# golem's commands for this repository: `golem checks detect` wrote this file from",
        f"# what it found ({conventions.source}). Edit it freely: it wins over detection.",
        "# The format is in golem's docs/checks.md.",
    ]
    if conventions.image:
        lines.append(f"image = {_string(conventions.image)}")
    lines += ["", "[commands]"]
    lines += [f"{step} = {_strings(getattr(conventions, step))}" for step in STEPS]
    lines += ["", "[dependencies]"]
    lines += [
        f"cache = {_strings(conventions.cache)}",
        f"keys = {_strings(conventions.cache_keys)}",
    ]
    lines += [f"registries = {_strings(conventions.registries)}", "", "[env]"]
    lines += [f"{_string(name)} = {_string(value)}" for name, value in conventions.env.items()]
    return "\n".join(lines) + "\n"


def _strings(values: list[str]) -> str:
    if not values:
        return "[]"
    if len(values) == 1 and len(values[0]) < 60:
        return f"[{_string(values[0])}]"
    return "[\n" + "".join(f"    {_string(value)},\n" for value in values) + "]"


def _string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML also wants DEL
    escaped (and JSON never writes ``\\/``)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _parse(path: Path, real: Path) -> ConventionsFile:
    fix = "Fix it (its format is in docs/checks.md), or remove it to let golem detect them."
    read = read_bytes(real, MAX_FILE_BYTES + 1)
    if read is None:
        raise ConfigError(f"{path} cannot be read. {fix}")
    data = read[0]
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_FILE_BYTES} bytes. {fix}")
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc.reason}). {fix}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}. {fix}") from exc
    try:
        return ConventionsFile.model_validate(table)
    except ValidationError as exc:
        problems = "\n".join(
            f"- {'.'.join(str(part) for part in error['loc']) or '(file)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"{path} is not a valid golem file:\n{problems}\n{fix}") from exc
