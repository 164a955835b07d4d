"""What a CI's shell line does, from the tool it runs: an install, a lint, a build or a
test, or none of those (setup, caching, uploads, publishing: never a check). Nothing is
run; lines are only read."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from golem.checks.contracts import Step
from golem.checks.detect.pyci import (
    hatch_script,
    installer_only,
    pip_command,
    strip_runner,
    translate_python_install,
)
from golem.checks.detect.python import PYTEST, PythonFacts
from golem.checks.detect.recipes import runner_recipe

__all__ = ["AUTOFIX_WHY", "Classified", "autofix", "classify", "recipe_commands", "script_lines"]

TEST_TOOLS = frozenset(
    {"pytest", "py.test", "jest", "vitest", "mocha", "ava", "ctest", "bats", "tap"}
)
LINT_TOOLS = frozenset(
    {
        "ruff",
        "flake8",
        "pylint",
        "mypy",
        "pyright",
        "basedpyright",
        "black",
        "isort",
        "pre-commit",
        "eslint",
        "prettier",
        "biome",
        "golangci-lint",
        "staticcheck",
        "gofmt",
        "codespell",
        "pydocstyle",
        "bandit",
        "vulture",
        "yamllint",
        "shellcheck",
        "actionlint",
        "stylelint",
        "markdownlint",
        "pycodestyle",
        "pyflakes",
        "deptry",
        "typos",
        "taplo",
        "xo",
        "dmypy",
    }
)
ENV_TOOLS = frozenset({"tox", "nox"})
SKIP_TOOLS = {
    "echo": "prints",
    "cat": "prints",
    "ls": "lists files",
    "git": "git, not a check",
    "twine": "publishes",
    "codecov": "uploads coverage",
    "coveralls": "uploads coverage",
    "docker": "docker is not in the box",
    "sudo": "needs root on the runner",
    "apt-get": "installs system packages: the box's image has what it has",
    "apt": "installs system packages: the box's image has what it has",
    "brew": "installs system packages: the box's image has what it has",
    "conda": "conda is not supported: write a .golem.toml",
    "mamba": "conda is not supported",
    "source": "golem makes the virtual environment itself",
    "virtualenv": "golem makes the venv",
    "rustup": "sets up the toolchain",
    "corepack": "sets up the toolchain",
    "gh": "talks to GitHub",
}
NODE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
PYTHON = re.compile(r"^python(?:3(?:\.\d+)?)?$")
PYTHON_WORD = re.compile(r"(^|\s)python(?:3(?:\.\d+)?)?(?=\s)")
MODULES_SKIPPED = {
    "venv": "golem makes the virtual environment itself",
    "virtualenv": "golem makes the virtual environment itself",
    "build": "builds distributions, for publishing",
}
TOOL_RUNNERS = (("uvx",), ("pipx", "run"), ("uv", "tool", "run"))
AUTOFIX_FLAGS = frozenset({"--fix", "--fix-only", "--write", "--apply", "--apply-unsafe"})
AUTOFIX_WHY = "writes its fixes instead of checking (an autofix): it would pass whatever the change"
AUTOFIX_SCRIPT = re.compile(r"(?:^|[:_-])(?:fix|write|autofix)(?:$|[:_-])|^(?:format|fmt)$", re.I)
UNKNOWN = "/unknown"
"""The directory after a ``cd`` golem cannot follow: the lines after it are left out."""
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Classified:
    """A shell line read: its step (None: not run by golem) and the commands to run."""

    step: Step | None
    commands: tuple[str, ...] = ()
    why: str = ""
    ecosystem: str = ""
    weak: bool = False
    directory: str = ""


def script_lines(script: str, workdir: str = "") -> list[tuple[str, str]]:
    """(directory, line) for each command of a ``run:``/``script:`` block: continuations
    joined, comments and blank lines left out, ``&&`` chains split, ``cd`` followed."""
    joined = re.sub(r"[ \t]*\\\n\s*", " ", script)
    found: list[tuple[str, str]] = []
    cwd = _join("", workdir)
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s+&&\s+", line):
            words = part.split()
            if words[:1] == ["cd"]:
                cwd = _join(cwd, words[1]) if len(words) == 2 else UNKNOWN
            elif words and not cwd.startswith(("..", "/")):  # never outside the repository
                found.append((cwd, part.strip()))
    return found


def classify(line: str, cwd: str, facts: PythonFacts) -> Classified:
    """What ``line``, run in ``cwd`` (relative to the repository's root), does."""
    try:
        words = shlex.split(line)
    except ValueError:
        return Classified(None, why="cannot be read as a shell command")
    assignments = []
    while words and ASSIGNMENT.match(words[0]):
        assignments.append(words.pop(0))
    stripped = _unwrap(strip_runner(words))
    if not stripped:
        return Classified(None, why="sets variables only")
    if stripped != words:  # a runner prefix went: the venv is first on PATH instead
        line = _without_prefix(line, assignments, len(words) - len(stripped), stripped)
    found = _classify_words(stripped, line, facts, cwd)
    if found.step is None or not cwd:
        return found
    commands = tuple(f"cd {shlex.quote(cwd)} && {command}" for command in found.commands)
    return Classified(found.step, commands, found.why, found.ecosystem, found.weak, cwd)


def _without_prefix(line: str, assignments: list[str], removed: int, kept: list[str]) -> str:
    """``line`` without its first ``removed`` words (after the assignments), as written
    when that is unambiguous (globs and quoting kept), else re-quoted."""
    parts = line.split(None, len(assignments) + removed)
    rest = parts[-1] if len(parts) > len(assignments) + removed else ""
    try:
        if shlex.split(rest) == kept:
            return " ".join([*parts[: len(assignments)], rest])
    except ValueError:
        pass
    return shlex.join([*assignments, *kept])


def _classify_words(words: list[str], line: str, facts: PythonFacts, cwd: str) -> Classified:
    tool = words[0].rsplit("/", 1)[-1]
    if PYTHON.match(tool):
        return _python_module(words, line, facts, cwd)
    if tool in ("pip", "pip3", "uv", "poetry", "pdm", "pipx"):
        return _python_install(["pip", *words[1:]] if tool == "pip3" else words, facts, cwd)
    readers = {
        "hatch": _hatch,
        "cargo": _compiled,
        "go": _compiled,
        "make": _target,
        "just": _target,
    }
    if tool in NODE_MANAGERS or tool == "npx":
        return _node(words, line)
    if tool in readers:
        return readers[tool](words, line, facts)
    return _tool(tool, words, line)


def autofix(words: list[str]) -> bool:
    """Whether a lint or format command writes its fixes instead of checking (``--fix``,
    ``--write``, ``gofmt -w``, ``black .``, ``ruff format .``, ``cargo fmt``): it passes
    whatever the change, so it never judges one."""
    tool, rest = (words[0].rsplit("/", 1)[-1], words[1:]) if words else ("", [])
    flags = set(rest)
    if flags & AUTOFIX_FLAGS or any(word.startswith("--fix=") for word in rest):
        return True
    checking = bool(flags & {"--check", "--check-only", "--diff", "-c", "-l", "--list"})
    if tool in ("prettier", "gofmt", "autopep8", "yapf") and flags & {"-w", "-i", "--in-place"}:
        return True
    formats = (tool in ("black", "isort")) or (tool, *rest[:1]) in (
        ("ruff", "format"),
        ("cargo", "fmt"),
    )
    return formats and not checking


def _tool(tool: str, words: list[str], line: str) -> Classified:
    if tool in LINT_TOOLS and autofix(words):
        return Classified(None, why=AUTOFIX_WHY)
    if tool in TEST_TOOLS:
        return Classified("test", (line,), tool)
    if tool in LINT_TOOLS:
        return Classified("lint", (line,), tool)
    if tool in ENV_TOOLS:
        step: Step = "lint" if _names_lint(words[1:]) else "test"
        return Classified(step, (line,), f"{tool} (builds its own environments)", weak=True)
    if tool == "tsc":
        return Classified("lint" if "--noEmit" in words else "build", (line,), "tsc")
    return Classified(None, why=SKIP_TOOLS.get(tool, f"{tool}: not a known check"))


def _python_module(words: list[str], line: str, facts: PythonFacts, cwd: str) -> Classified:
    rest = words[1:]
    command = PYTHON_WORD.sub(r"\1python3", line, count=1)
    if rest[:2] == ["manage.py", "test"]:
        return Classified("test", (command,), "manage.py test")
    if rest[:1] != ["-m"] or len(rest) < 2:
        return Classified(None, why="runs a script, not a known check")
    module = rest[1]
    if module == "pip":
        return _python_install(["pip", *rest[2:]], facts, cwd)
    if module in ("pytest", "unittest", "doctest"):
        return Classified("test", (command,), module)
    if module in MODULES_SKIPPED:
        return Classified(None, why=MODULES_SKIPPED[module])
    return _tool(module, [module, *rest[2:]], command)


def _python_install(words: list[str], facts: PythonFacts, cwd: str) -> Classified:
    arguments = translate_python_install(words, facts)
    if arguments is None:
        return _tool(words[0], words, shlex.join(words))
    if not arguments or installer_only(arguments):
        return Classified(None, why="upgrades the installer only")
    return Classified("install", (pip_command(arguments),), "into the venv", "python")


def _hatch(words: list[str], _line: str, facts: PythonFacts) -> Classified:
    if words[1:2] == ["test"]:
        return Classified("test", (PYTEST,), "hatch test runs pytest")
    if words[1:2] == ["run"]:
        lines = hatch_script(words, facts)
        if lines:
            steps = [classify(line, "", facts) for line in lines]
            chosen = [found for found in steps if found.step is not None]
            if chosen:
                commands = tuple(c for found in chosen for c in found.commands)
                return Classified(chosen[0].step, commands, f"hatch script {words[2]}")
    return Classified(None, why="a hatch command that is no script of the project")


def _node(words: list[str], line: str) -> Classified:
    manager, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if manager == "npx" or rest[:1] in (["exec"], ["dlx"], ["x"]):
        return _node_exec(manager, rest, line)
    verb = rest[0] if rest else "install"
    if verb in ("ci", "install", "i") and not [w for w in rest[1:] if not w.startswith("-")]:
        if "-g" in rest or "--global" in rest:
            return Classified(None, why="a global install")
        return Classified("install", (line,), manager, "node")
    if verb in ("test", "t"):
        return Classified("test", (line,), f"{manager} test")
    if manager != "npm" and (verb in TEST_TOOLS or verb in LINT_TOOLS):  # pnpm vitest: its bin
        return _tool(verb, rest, line)
    return _node_script(manager, verb, rest, line)


def _node_script(manager: str, verb: str, rest: list[str], line: str) -> Classified:
    """``npm run lint``, ``pnpm lint``: a script, by its name (never an autofix)."""
    script = rest[1] if verb in ("run", "run-script") and len(rest) > 1 else verb
    if AUTOFIX_SCRIPT.search(script) or set(rest) & AUTOFIX_FLAGS:
        return Classified(None, why=f"script {script} {AUTOFIX_WHY}")
    step = _script_step(script)
    return (
        Classified(step, (line,), f"script {script}")
        if step
        else Classified(None, why=f"{manager} {verb}: not a check")
    )


def _node_exec(manager: str, rest: list[str], line: str) -> Classified:
    """``npx tool ...``, ``pnpm exec tool ...``: the tool's own classification."""
    inner = rest[1:] if manager != "npx" else [w for w in rest if not w.startswith("-")]
    if inner and inner[0] in LINT_TOOLS and autofix([inner[0], *rest]):
        return Classified(None, why=AUTOFIX_WHY)
    found = _tool(inner[0], inner, line) if inner else Classified(None)
    return found if found.step is not None else Classified(None, why=found.why)


def _compiled(words: list[str], line: str, _facts: PythonFacts) -> Classified:
    tool, verb = words[0], words[1] if len(words) > 1 else ""
    steps: dict[str, Step] = {
        "test": "test",
        "nextest": "test",
        "clippy": "lint",
        "fmt": "lint",
        "vet": "lint",
        "build": "build",
        "check": "build",
        "fetch": "install",
    }
    if tool == "go" and words[1:3] == ["mod", "download"]:
        return Classified("install", (line,), "go mod download", "go")
    if tool == "go" and verb in ("fmt", "fetch", "check"):
        return Classified(None, why=f"go {verb}: not a check")
    step = steps.get(verb)
    if step is None:
        return Classified(None, why=f"{tool} {verb}: not a check")
    if step == "lint" and autofix(words):
        return Classified(None, why=f"{tool} {verb} {AUTOFIX_WHY}")
    return Classified(
        step, (line,), f"{tool} {verb}", "rust" if tool == "cargo" and step == "install" else ""
    )


def _target(words: list[str], line: str, facts: PythonFacts) -> Classified:
    targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    if not targets:
        return Classified(
            None, why=f"{words[0]} runs its default target: what it checks is unknown"
        )
    if AUTOFIX_SCRIPT.search(targets[0]):
        return Classified(None, why=f"{words[0]} {targets[0]} {AUTOFIX_WHY}")
    recipe = runner_recipe(facts.files, words[0], targets[0]) if len(targets) == 1 else None
    if recipe is not None:
        return recipe_commands(recipe, f"{words[0]} {targets[0]}", facts)
    step = _script_step(targets[0])
    return (
        Classified(step, (line,), f"{words[0]} {targets[0]}")
        if step
        else Classified(None, why=f"{words[0]} {targets[0]}: not a check")
    )


def recipe_commands(
    recipe: list[str], name: str, facts: PythonFacts, how: str = "its recipe without the runner"
) -> Classified:
    """A target's recipe as the commands it runs (their environment manager left out)."""
    read = [classify(line, "", facts) for line in recipe]
    steps = [found for found in read if found.step is not None and found.step != "install"]
    if not steps:
        return Classified(None, why=f"{name}: its recipe runs no known check")
    commands = tuple(command for found in steps for command in found.commands)
    return Classified(steps[0].step, commands, f"{name}, {how}")


def _script_step(name: str) -> Step | None:
    """A script's or target's step, by its name."""
    lowered = name.lower()
    if lowered.startswith("test") or re.match(r"^(check|unit|e2e|coverage|cov|ci)\b", lowered):
        return "test"
    if re.match(
        r"^(lint|typecheck|type-check|types|check-types|format:check|fmt:check|check-format|style|flake8|mypy|ruff)",
        lowered,
    ):
        return "lint"
    if lowered.startswith("build") or lowered in ("compile", "all"):
        return "build"
    return None


def _names_lint(arguments: list[str]) -> bool:
    text = " ".join(arguments)
    return re.search(r"\b(lint|style|flake8|mypy|ruff|typing|types|pre-commit)\b", text) is not None


def _unwrap(words: list[str]) -> list[str]:
    for prefix in TOOL_RUNNERS:  # a tool run in a throwaway environment: the venv's instead
        if tuple(words[: len(prefix)]) == prefix:
            words = words[len(prefix) :]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("--from", "--with", "--python") else words[1:]
    while words and words[0] in ("time", "env", "xvfb-run", "nice"):
        words = words[1:]
        while words and (words[0].startswith("-") or ASSIGNMENT.match(words[0])):
            words = words[1:]
    if len(words) > 3 and PYTHON.match(words[0]) and words[1:4] == ["-m", "coverage", "run"]:
        words = words[2:]
    if words[:2] == ["coverage", "run"]:
        rest = _coverage_program(words[2:])
        return ["python3", *rest] if rest[:1] == ["-m"] else rest
    return words


COVERAGE_VALUES = frozenset(
    {
        "--source",
        "--include",
        "--omit",
        "--rcfile",
        "--data-file",
        "--context",
        "--concurrency",
        "--debug",
    }
)


def _coverage_program(words: list[str]) -> list[str]:
    """What ``coverage run [options]`` runs: ``-m module args`` or ``script args``."""
    rest = list(words)
    while rest and rest[0].startswith("-") and rest[0] != "-m":
        option = rest.pop(0)
        if option == "--":
            break
        if option in COVERAGE_VALUES and rest:
            rest.pop(0)
    return rest


def _join(cwd: str, rel: str) -> str:
    if re.search(r"[*?$`~\[{]", rel) or cwd == UNKNOWN:
        return UNKNOWN  # a glob, a variable, home: where it lands is known only on the runner
    joined = posixpath.normpath(posixpath.join(cwd or ".", rel))
    return "" if joined == "." else joined
