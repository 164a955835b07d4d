"""What a CI runs, found the way it runs it, and never an autofix as the check that judges:
a test command wrapped in ``coverage run`` (with its options, as a module of Python too) or
run as a package manager's binary (``pnpm vitest --coverage``) is the test check; a command
that writes its fixes (``pnpm lint:fix``, ``--fix``, ``--write``, a formatter without
``--check``) is left out, with why, and the repository's checking command is taken instead."""

from __future__ import annotations

import pytest

from golem.checks import load_conventions
from tests.checks.conftest import MakeRepo

PYPROJECT = '[project]\nname = "slug"\nversion = "1"\n'


def workflow(*lines: str) -> str:
    runs = "".join(f"      - run: {line}\n" for line in lines)
    return f"on: pull_request\njobs:\n  ci:\n    runs-on: ubuntu-latest\n    steps:\n{runs}"


@pytest.mark.parametrize(
    ("line", "test"),
    [
        ("python -m coverage run -m pytest", "python3 -m pytest"),
        ("python3 -m coverage run --source slug -m pytest -q", "python3 -m pytest -q"),
        ("coverage run -p -m pytest tests", "python3 -m pytest tests"),
        ("coverage run --branch --rcfile .coveragerc -m pytest", "python3 -m pytest"),
        ("uv run coverage run --data-file .cov -m pytest -x", "python3 -m pytest -x"),
    ],
)
def test_a_test_command_wrapped_in_coverage_run_is_the_test_check(
    make_repo: MakeRepo, line: str, test: str
) -> None:
    repo = make_repo({".github/workflows/ci.yml": workflow(line), "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    assert conventions.test == [test]


@pytest.mark.parametrize("line", ["pnpm vitest --coverage", "pnpm vitest run --coverage"])
def test_a_package_managers_binary_run_by_name_is_the_test_check(
    make_repo: MakeRepo, line: str
) -> None:
    repo = make_repo(
        {
            ".github/workflows/ci.yml": workflow("pnpm install --frozen-lockfile", line),
            "package.json": '{"devDependencies": {"vitest": "2.0.0"}}',
            "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == [line]


AUTOFIXES = [
    "pnpm lint:fix",
    "pnpm run lint:fix",
    "pnpm lint --fix",
    "npx eslint --fix .",
    "pnpm exec prettier --write .",
    "npm run format",
]


@pytest.mark.parametrize("line", AUTOFIXES)
def test_a_node_autofix_is_never_the_lint_that_judges(make_repo: MakeRepo, line: str) -> None:
    scripts = '{"scripts": {"lint": "eslint .", "lint:fix": "eslint . --fix", "format": "x"}}'
    repo = make_repo(
        {
            ".github/workflows/autofix.yml": workflow("pnpm install --frozen-lockfile", line),
            "package.json": scripts,
            "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.lint == ["pnpm run lint"]  # the package's checking script
    [finding] = [f for f in conventions.findings if f.command == line]
    assert not finding.used
    assert "autofix" in finding.why


@pytest.mark.parametrize(
    ("line", "checking"),
    [
        ("ruff check --fix .", "ruff check --output-format=github ."),
        ("ruff format .", "ruff format --check ."),
        ("black .", "black --check ."),
        ("isort src", "isort --check-only src"),
        ("gofmt -w .", "gofmt -l ."),
        ("cargo fmt", "cargo fmt -- --check"),
    ],
)
def test_a_formatter_that_writes_is_never_the_lint_that_judges_its_checking_form_is(
    make_repo: MakeRepo, line: str, checking: str
) -> None:
    repo = make_repo(
        {".github/workflows/ci.yml": workflow(line, checking), "pyproject.toml": PYPROJECT}
    )

    conventions = load_conventions(repo)

    assert conventions.lint == [checking]


def test_a_package_script_that_writes_fixes_is_not_the_lint(make_repo: MakeRepo) -> None:
    scripts = '{"scripts": {"lint": "eslint . --fix && prettier --write .", "test": "vitest"}}'
    repo = make_repo({"package.json": scripts, "package-lock.json": "{}"})

    conventions = load_conventions(repo)

    assert conventions.lint == []
    assert conventions.test == ["npm test"]
