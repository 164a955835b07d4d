"""Fixture repositories, one per ecosystem, each at a real bug with no golem configuration.

Each ``Ecosystem`` (its files in ``repos/NAME/base``) is a small repository the way its
ecosystem lays one out (a pyproject
with extras, plain unittest files with no manifest, plain pytest-style test functions with
no manifest, a Node package with its lockfile, a Go
module, a Cargo crate, a repository whose GitHub Actions workflow runs its checks its own
way, a Makefile whose lint is a formatter, and one with nothing to check), a bug its own
tests catch, the edit that fixes it and an edit that does not. ``make_remote`` turns one into
a bare repository, the way a forge serves it; ``scripted_model`` writes the scripted model
that makes the edit and adds the test that proves it (``repos/NAME/added``), as an upstream
fix does: the tests there at the base commit pass, the bug is the one they miss.

The Node package depends on ``tiny-pad``, published in the local npm registry of
``tests.blueprint.registries`` (``publish``); the pyproject's ``tests`` extra needs pytest
and its build needs setuptools, real wheels the local package index serves.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.blueprint.registries import LocalRegistries, downloaded_wheels

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]


@dataclass(frozen=True)
class Edit:
    """One edit the scripted agent makes."""

    path: str
    old: str
    new: str


REPOS = Path(__file__).parent / "repos"


@dataclass(frozen=True)
class Ecosystem:
    """A fixture repository and what a run on it should find."""

    name: str
    task: str
    fix: Edit
    wrong: Edit
    test_command: str  # a part of the command that must have run the repository's tests
    installs: bool  # whether golem should install dependencies first
    prepare: Callable[[Path, LocalRegistries], None] | None = field(default=None, compare=False)
    history: tuple[str, ...] = ()
    """Commit messages: the repository is ``repos/NAME/commits/1``, ``2``... each laid over
    the one before and committed with its message (the base is the last); without them,
    ``repos/NAME/base`` in one commit."""

    @property
    def base(self) -> Path:
        return REPOS / self.name / "base"

    def added(self) -> dict[str, str]:
        """The files the fix adds (its test), by path."""
        root = REPOS / self.name / "added"
        return {
            path.relative_to(root).as_posix(): path.read_text()
            for path in sorted(root.rglob("*"))
            if path.is_file()
        }


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout


def make_remote(parent: Path, ecosystem: Ecosystem, registries: LocalRegistries) -> Path:
    """``ecosystem``'s repository as a bare repository with one commit on main (what it
    depends on published in ``registries``)."""
    layers = [
        (REPOS / ecosystem.name / "commits" / str(number), message)
        for number, message in enumerate(ecosystem.history, 1)
    ] or [(ecosystem.base, "seed")]
    prepare = ecosystem.prepare
    return make_history(
        parent,
        ecosystem.name,
        layers,
        None if prepare is None else lambda w: prepare(w, registries),
    )


def make_history(
    parent: Path,
    name: str,
    layers: list[tuple[Path, str]],
    prepare: Callable[[Path], None] | None = None,
) -> Path:
    """A bare repository ``parent/NAME.git`` whose main branch has one commit per layer:
    the layer's files laid over the commit before (``prepare`` then run on the tree), with
    its message."""
    work = parent / f"{name}-seed"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    for layer, message in layers:
        shutil.copytree(layer, work, dirs_exist_ok=True)
        if prepare is not None:
            prepare(work)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", message, cwd=work)
    remote = parent / f"{name}.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    return remote


def scripted_model(directory: Path, ecosystem: Ecosystem, *, wrong: bool = False) -> str:
    """A scripted model (``scripted:FILE``) that makes the fix (or the wrong edit), then
    finishes; in fix rounds it gives up."""
    edit = ecosystem.wrong if wrong else ecosystem.fix
    label = f"{ecosystem.name}-{'wrong' if wrong else 'fix'}"
    return scripted_edits(directory, label, [edit], ecosystem.added())


def scripted_edits(
    directory: Path, label: str, edits: list[Edit], added: dict[str, str] | None = None
) -> str:
    """A scripted model that makes ``edits`` and writes ``added`` (path -> text), then
    finishes; in each of two fix rounds it gives up (finishes, changing nothing)."""
    turns: list[dict[str, object]] = [
        *({"tool_calls": [{"name": "edit", "arguments": edit.__dict__}]} for edit in edits),
        *(
            {"tool_calls": [{"name": "write", "arguments": {"path": path, "content": text}}]}
            for path, text in (added or {}).items()
        ),
        {"tool_calls": [{"name": "finish", "arguments": {"summary": f"fixed {edits[0].path}"}}]},
    ]
    for round_ in (1, 2):
        turns += [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo thinking"}}]},
            {"tool_calls": [{"name": "finish", "arguments": {"summary": f"round {round_}"}}]},
        ]
    script = directory / f"{label}.yaml"
    script.write_text(yaml.safe_dump({"model": "fixture", "turns": turns}))
    return f"scripted:{script}"


PYPROJECT_EXTRAS = Ecosystem(
    name="pyextras",
    task="slugify() leaves empty words when a title has several spaces or tabs",
    fix=Edit("slugkit/__init__.py", 'title.lower().split(" ")', "title.lower().split()"),
    wrong=Edit("slugkit/__init__.py", 'title.lower().split(" ")', 'title.lower().split("  ")'),
    test_command="pytest",
    installs=True,
)

PLAIN_UNITTEST = Ecosystem(
    name="pyplain",
    task="count_words('') should be 0 and newlines separate words",
    fix=Edit("wordcount.py", 'len(text.split(" "))', "len(text.split())"),
    wrong=Edit("wordcount.py", 'len(text.split(" "))', 'len(text.strip().split(" "))'),
    test_command="unittest",
    installs=False,
)

GO_MODULE = Ecosystem(
    name="gomod",
    task="Clamp returns the lower bound for values above the range",
    fix=Edit("clamp.go", "\tif v > hi {\n\t\treturn lo", "\tif v > hi {\n\t\treturn hi"),
    wrong=Edit("clamp.go", "\tif v > hi {\n\t\treturn lo", "\tif v > hi {\n\t\treturn v"),
    test_command="go test",
    installs=True,
)

CARGO_CRATE = Ecosystem(
    name="crate",
    task="midpoint overflows for large numbers",
    fix=Edit("src/lib.rs", "    (a + b) / 2", "    a / 2 + b / 2 + (a % 2 + b % 2) / 2"),
    wrong=Edit("src/lib.rs", "    (a + b) / 2", "    a.wrapping_add(b) / 2"),
    test_command="cargo test",
    installs=True,
)

TINY_PAD = {"index.js": "module.exports = (text, width) => text.padStart(width);\n"}


def _node_lockfile(work: Path, registries: LocalRegistries) -> None:
    """tiny-pad published, and the lockfile that pins it."""
    integrity = registries.add_npm("tiny-pad", "1.0.0", TINY_PAD)
    lock = registries.npm_lock("padder", {"tiny-pad": ("1.0.0", integrity)})
    (work / "package-lock.json").write_text(lock)


PYTHON_WHEELS = ("setuptools>=61", "pytest>=7")
"""What the pyproject's build and its tests extra install from the package index."""


def serve_python_wheels(registries: LocalRegistries) -> None:
    """The real wheels the Python fixtures install, in the local package index."""
    for wheel in downloaded_wheels(*PYTHON_WHEELS):
        registries.add_wheel_file(wheel)


NODE_PACKAGE = Ecosystem(
    name="nodelock",
    task="align() pads to the shortest label instead of the widest",
    fix=Edit("index.js", "Math.min(", "Math.max("),
    wrong=Edit("index.js", "Math.min(", "1 + Math.min("),
    test_command="npm test",
    installs=True,
    prepare=_node_lockfile,
)

WORKFLOW_CHECKS = Ecosystem(
    name="workflow",
    task="to_roman(30) gives X: repeated numerals are missing",
    fix=Edit("roman.py", "        if number >= value:", "        while number >= value:"),
    wrong=Edit("roman.py", "            out += numeral\n", "            out += numeral * 2\n"),
    test_command="check_*.py",
    installs=False,
)

FORMATTER_LINT = Ecosystem(
    name="formatter",
    task="greet() forgets the comma",
    fix=Edit("greet.py", '    return "Hello " + name', '    return "Hello, " + name   '),
    wrong=Edit("greet.py", '    return "Hello " + name', '    return "Hello " + name + ","'),
    test_command="make test",
    installs=False,
)

NOTHING_TO_CHECK = Ecosystem(
    name="nochecks",
    task="hello.sh misspells Hello",
    fix=Edit("hello.sh", "Helo", "Hello"),
    wrong=Edit("hello.sh", "Helo", "Hallo"),
    test_command="",
    installs=False,
)

PLAIN_TEST_FUNCTIONS = Ecosystem(
    name="pyfunctions",
    task="initials() keeps lower-case initials lower case",
    fix=Edit("initials.py", "word[0] for", "word[0].upper() for"),
    wrong=Edit("initials.py", "word[0] for", "word[0].lower() for"),
    test_command="pytest",  # plain test functions: unittest discovery would run none
    installs=True,
)

VERIFIED = [
    PYPROJECT_EXTRAS, PLAIN_UNITTEST, PLAIN_TEST_FUNCTIONS, NODE_PACKAGE, GO_MODULE,
    CARGO_CRATE, WORKFLOW_CHECKS,
]  # fmt: skip
"""The ecosystems whose own tests verify a fix."""


# Verification holds the agent to its task (issue 27): repositories with history.

TARGET_TESTS = Ecosystem(
    name="pytarget",
    task="slugify() leaves empty words when a title has runs of spaces, tabs or newlines",
    fix=Edit("textkit/slugify.py", 'title.lower().split(" ")', "title.lower().split()"),
    wrong=Edit(
        "textkit/slugify.py", 'title.lower().split(" ")', 'title.strip().lower().split(" ")'
    ),
    test_command="pytest",
    installs=True,
    history=(
        "textkit: slugify titles, report counts",
        "tests: slugify() collapses runs of whitespace (#12)",
    ),
)
"""Its last commit adds four tests of the task that fail on it (the bug is not fixed yet);
an older test, of the report, fails there too, and neither the task nor a fix concerns it."""

PARTIAL_FIX = Edit(
    "textkit/slugify.py",
    '"-".join(title.lower().split(" "))',
    '"-".join(word for word in title.lower().split(" ") if word)',
)
"""Runs of spaces collapse; tabs and newlines still do not: two of the four tests pass."""

PRE_COMMIT = Ecosystem(
    name="precommit",
    task="greet() forgets the comma after Hello",
    fix=Edit("greeter/__init__.py", '"Hello " + name', '"Hello, " + name'),
    wrong=Edit("greeter/__init__.py", '"Hello " + name', '"Hello " + name + ","'),
    test_command="pytest",
    installs=True,
    history=("greeter, its CI and its pre-commit hooks",),
)
"""Its CI runs pre-commit, whose hooks come from GitHub: out of the install's reach."""

FLAKE8_LINT = Ecosystem(
    name="flake8lint",
    task="count_words('') should be 0, not 1",
    fix=Edit("wordcount.py", 'len(text.split(" "))', "len(text.split())"),
    wrong=Edit(
        "wordcount.py",
        '"""Counting words."""\n',
        '"""Counting words."""\nimport os\n',
    ),
    test_command="pytest",
    installs=True,
    history=("wordcount, linted by flake8 over the whole tree",),
)
"""Its CI runs ``flake8 .``: every Python file of the tree, golem's would be too. ``wrong``
adds a lint error (an unused import); made with ``fix``, a right fix that fails the lint."""

DOCKER_SDK = Ecosystem(
    name="pydocker",
    task="total_quantity() says None for an empty inventory; it should say 0",
    fix=Edit(
        "inventory/__init__.py",
        '"SELECT sum(quantity) FROM items"',
        '"SELECT coalesce(sum(quantity), 0) FROM items"',
    ),
    wrong=Edit(
        "inventory/__init__.py",
        '"SELECT sum(quantity) FROM items"',
        '"SELECT sum(quantity) FROM items WHERE quantity IS NOT NULL"',
    ),
    test_command="pytest",
    installs=True,
)
"""Its pytest suite starts ``postgres:16`` with the docker SDK as testcontainers does (run
the container, wait until it accepts connections, talk to it with psycopg): no service is
declared anywhere, its test code names the image."""
CI_SERVICE = Ecosystem(
    name="ciservice",
    task="fetch() keeps the trailing newline of the web service's page",
    fix=Edit(
        "greeting.py", "return answer.read().decode()", "return answer.read().decode().strip()"
    ),
    wrong=Edit(
        "greeting.py", "return answer.read().decode()", 'return answer.read().decode().strip(" ")'
    ),
    test_command="unittest",
    installs=False,
)
"""Its CI job runs a web service beside the tests (GitLab CI's ``services:``, with its
command: golem/busybox serving a page), which its tests reach on localhost."""
COMPOSE_MAKE = Ecosystem(
    name="composemake",
    task="fetch() keeps the trailing newline of the web service's page",
    fix=Edit(
        "greeting.py", "return answer.read().decode()", "return answer.read().decode().strip()"
    ),
    wrong=Edit(
        "greeting.py", "return answer.read().decode()", 'return answer.read().decode().strip(" ")'
    ),
    test_command="make test",
    installs=False,
)
"""Its Makefile's test target brings its compose file up (``docker compose up -d``) first:
a web service on the project's network, its port published on the box's localhost."""
PG_SERVICE = Ecosystem(
    name="pgservice",
    task="item_names() lists the items in the order they were added, not alphabetically",
    fix=Edit("shop/__init__.py", "ORDER BY id", "ORDER BY name"),
    wrong=Edit("shop/__init__.py", "ORDER BY id", "ORDER BY id DESC"),
    test_command="pytest",
    installs=True,
)
"""Its GitHub Actions job declares ``services: postgres`` (``postgres:16``, its env, ports
and ``--health-cmd pg_isready`` as real workflows write them); its pytest suite talks to the
service with psycopg on localhost:5432."""
CONTAINER_WHEELS = ("setuptools>=61", "pytest>=7", "docker>=6")
"""What the repositories whose tests need containers install from the package index."""
POSTGRES_WHEELS = ("psycopg[binary]>=3.1",)
"""What the PostgreSQL repository adds: psycopg and its libpq, compiled for the boxes'
platform (``BOX_PLATFORMS``)."""
BOX_PLATFORMS = ("manylinux2014_x86_64",)
"""The boxes' platform: pure wheels, and compiled ones built for it."""

VERIFICATION_WHEELS = ("setuptools>=61", "pytest>=7", "flake8", "pre-commit")
"""What these repositories' installs fetch from the package index (pre-commit's PyYAML is
compiled: its wheel is the boxes' platform's)."""


# `golem eval` (issue 33): a repository whose history fixes bugs with tests.

FIXES_HISTORY = (
    "textstats: count words, lines and initials",
    "count_words('') is 0, not 1\n\nAn empty text has no word; runs of spaces are one gap.",
    "docs: say what a word is",
    "count_lines() counts a last line that has no newline",
    "tests: the initial of a single word",
    "initials() are upper case whatever the name's case",
    "count_lines() by splitlines(), and a test of blank lines",
)
"""``repos/fixes/commits/N``: three commits fix a bug with a test (2, 4, 6); one changes
only the README (3), one only a test (5), one refactors with a test that passed before (7)."""


def fixes_remote(parent: Path) -> Path:
    """The ``fixes`` repository (``FIXES_HISTORY``) as a bare repository."""
    layers = [
        (REPOS / "fixes" / "commits" / str(number), message)
        for number, message in enumerate(FIXES_HISTORY, 1)
    ]
    return make_history(parent, "fixes", layers)


def fixed_history(parent: Path, ecosystem: Ecosystem) -> Path:
    """``ecosystem``'s repository with history: its base, then a commit that fixes the bug
    and adds the test that proves it (as an upstream fix does), with the task as message."""
    fixed = parent / f"{ecosystem.name}-fixed"
    shutil.copytree(ecosystem.base, fixed)
    source = fixed / ecosystem.fix.path
    text = source.read_text()
    assert ecosystem.fix.old in text, f"{ecosystem.name}: the fix does not apply"
    source.write_text(text.replace(ecosystem.fix.old, ecosystem.fix.new, 1))
    for path, body in ecosystem.added().items():
        (fixed / path).parent.mkdir(parents=True, exist_ok=True)
        (fixed / path).write_text(body)
    return make_history(parent, ecosystem.name, [(ecosystem.base, "seed"), (fixed, ecosystem.task)])
