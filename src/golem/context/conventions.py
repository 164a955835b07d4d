"""A repository's own setup, lint, build and test commands, and its devbox image.

``.golem.toml`` in the repository's root says them; when it is there it wins entirely (a
step it leaves out has no command: golem never mixes the file with guesses). Without it,
they are detected from the repository's build files (``detect.py``). Nothing is run for
either: files are only read.

```toml
image = "golem/python:3.11"           # optional: the devbox image to run in

[commands]                            # each a string or a list of strings
setup = "python3 -m pip install -e '.[dev]'"
lint = ["ruff check .", "mypy"]
build = []
test = "python3 -m pytest -q"
```
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from golem.context.contracts import RepoConventions
from golem.context.detect import detect_conventions
from golem.context.files import file_in_repo, read_bytes
from golem.core import ConfigError

__all__ = ["CONVENTIONS_FILE", "ConventionsFile", "load_conventions"]

CONVENTIONS_FILE = ".golem.toml"
"""The file, in the repository's root, that names its commands."""

MAX_FILE_BYTES = 64 * 1024


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _no_blank(commands: list[str]) -> list[str]:
    stripped = [command.strip() for command in commands]
    if any(not command for command in stripped):
        raise ValueError("a command is empty; remove it or write the command")
    return stripped


Commands = Annotated[
    list[str],
    BeforeValidator(_as_list),
    AfterValidator(_no_blank),
]


class CommandsTable(BaseModel):
    """``[commands]``: each step as one command or a list run in order."""

    model_config = ConfigDict(extra="forbid")

    setup: Commands = Field(default_factory=list)
    lint: Commands = Field(default_factory=list)
    build: Commands = Field(default_factory=list)
    test: Commands = Field(default_factory=list)


class ConventionsFile(BaseModel):
    """The whole of ``.golem.toml``."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = Field(None, min_length=1, description="The devbox image to run in.")
    commands: CommandsTable = Field(default_factory=CommandsTable)


def load_conventions(repo: str | os.PathLike[str]) -> RepoConventions:
    """The conventions of the checked-out ``repo``: its ``.golem.toml`` when there is one,
    otherwise what its build files say; empty (with a ``source`` saying so) when nothing
    names a command. A ``ConfigError`` naming the file when ``.golem.toml`` is invalid."""
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
    return RepoConventions(
        setup=commands.setup,
        lint=commands.lint,
        build=commands.build,
        test=commands.test,
        image=parsed.image,
        source=f"from {CONVENTIONS_FILE}",
    )


def _parse(path: Path, real: Path) -> ConventionsFile:
    fix = "Fix it (its format is in docs/context.md), or remove it to let golem detect them."
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
