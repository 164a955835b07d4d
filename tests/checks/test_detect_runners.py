"""Task runners (Makefile, justfile, package.json, pre-commit, tox, nox) and ecosystem
defaults (Node by lockfile, Go, Rust), and how sources rank."""

from __future__ import annotations

import json
from pathlib import Path

from golem.checks import RepoConventions, load_conventions
from golem.core import BOX_PATH
from tests.checks.conftest import MakeRepo

PNPM_9 = (
    "command -v pnpm >/dev/null || npm install --prefix /tmp/golem/node-tools --no-audit --no-fund "
    "pnpm@9"
)
CARGO = '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n'


def test_vitest_with_pnpm_installs_by_the_lockfile_and_runs_the_scripts(
    make_repo: MakeRepo,
) -> None:
    scripts = {
        "test": "vitest run",
        "lint": "eslint .",
        "typecheck": "tsc --noEmit",
        "build": "vite build",
    }
    repo = make_repo(
        {
            "package.json": json.dumps({"scripts": scripts}),
            "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        }
    )

    conventions = load_conventions(repo)

    assert (conventions.install, conventions.lint, conventions.build, conventions.test) == (
        [PNPM_9, "pnpm install --frozen-lockfile"],
        ["pnpm run lint", "pnpm run typecheck"],
        ["pnpm run build"],
        ["pnpm test"],
    )
    assert conventions.cache == ["node_modules", "/tmp/golem/node-tools"]
    assert conventions.cache_keys == ["package.json", "pnpm-lock.yaml"]
    assert conventions.registries == ["registry.npmjs.org"]
    assert conventions.env == {"PATH": f"/tmp/golem/node-tools/node_modules/.bin:{BOX_PATH}"}


def test_the_package_manager_version_follows_package_json_then_the_lockfile(
    make_repo: MakeRepo,
) -> None:
    named = {"packageManager": "yarn@4.5.1+sha512.abc", "scripts": {"test": "vitest"}}
    berry = make_repo({"package.json": json.dumps(named), "yarn.lock": "__metadata:\n"})
    pnpm8 = make_repo(
        {"package.json": "{}", "pnpm-lock.yaml": "lockfileVersion: '6.0'\n"}, name="pnpm8"
    )
    npm = make_repo({"package.json": "{}", "package-lock.json": "{}"}, name="npm")
    bun = make_repo(
        {"package.json": '{"scripts": {"test": "bun test"}}', "bun.lock": "{}"}, name="bun"
    )

    assert load_conventions(berry).install == [
        "command -v yarn >/dev/null || npm install --prefix /tmp/golem/node-tools --no-audit "
        "--no-fund @yarnpkg/cli-dist@4.5.1",
        "yarn install --frozen-lockfile",
    ]
    assert load_conventions(pnpm8).install[0].endswith(" pnpm@8")
    assert load_conventions(bun).install == [
        "command -v bun >/dev/null || npm install --prefix /tmp/golem/node-tools --no-audit "
        "--no-fund bun@1",
        "bun install --frozen-lockfile",
    ]
    assert load_conventions(bun).test == ["bun test"]
    assert load_conventions(npm).install == ["npm ci"]
    assert load_conventions(npm).env == {}


def test_yarn_reaches_its_own_registry_and_no_lockfile_means_npm_install(
    make_repo: MakeRepo,
) -> None:
    yarn = make_repo({"package.json": '{"scripts": {"test": "jest"}}', "yarn.lock": ""})
    bare = make_repo({"package.json": '{"scripts": {"test": "jest"}}'}, name="bare")

    assert load_conventions(yarn).registries == [
        "registry.npmjs.org",
        "registry.yarnpkg.com",
    ]
    assert load_conventions(yarn).install == [
        "command -v yarn >/dev/null || npm install --prefix /tmp/golem/node-tools --no-audit "
        "--no-fund yarn@1",
        "yarn install --frozen-lockfile",
    ]
    assert load_conventions(bare).install == ["npm install"]
    assert load_conventions(bare).cache_keys == ["package.json"]


def test_a_cargo_project_fetches_into_the_workspace_and_runs_cargo_test(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"Cargo.toml": CARGO, "Cargo.lock": "version = 3\n", "src/lib.rs": ""})

    conventions = load_conventions(repo)

    assert conventions == RepoConventions(
        install=["cargo fetch"],
        test=["cargo test"],
        cache=["/tmp/golem/cargo"],
        cache_keys=["Cargo.toml", "Cargo.lock"],
        registries=["index.crates.io", "static.crates.io", "crates.io"],
        env={"CARGO_HOME": "/tmp/golem/cargo"},
        ecosystems=["rust"],
        findings=conventions.findings,
        source="detected: ecosystem default (test)",
    )


def test_a_go_module_downloads_into_the_workspace_and_runs_go_test(make_repo: MakeRepo) -> None:
    repo = make_repo({"go.mod": "module example.com/x\n\ngo 1.21\n", "x.go": "package x\n"})

    conventions = load_conventions(repo)

    assert conventions.install == ["go mod download"]
    assert conventions.test == ["go test ./..."]
    assert conventions.lint == []  # go vet only when the CI runs it
    assert conventions.cache == ["/tmp/golem/go"]
    assert conventions.cache_keys == ["go.mod"]  # no go.sum: only what exists keys the cache
    assert conventions.env == {
        "GOMODCACHE": "/tmp/golem/go/mod",
        "GOPATH": "/tmp/golem/go",
        "GOCACHE": "/tmp/go-build",
    }
    assert conventions.registries == [
        "proxy.golang.org", "sum.golang.org", "storage.googleapis.com",
    ]  # fmt: skip


def test_several_ecosystems_merge_each_install_in_order(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "pyproject.toml": (
                '[project]\nname = "x"\nversion = "0"\n'
                '[project.optional-dependencies]\ntest = ["pytest"]\n'
            ),
            "tests/test_x.py": "def test_x(): ...\n",
            "package.json": '{"scripts": {"build": "tsc"}}',
            "package-lock.json": "{}",
            "Cargo.toml": CARGO,
        }
    )

    conventions = load_conventions(repo)

    assert conventions.ecosystems == ["python", "node", "rust"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e '.[test]'",
        "npm ci",
        "cargo fetch",
    ]
    assert conventions.cache == ["/tmp/golem/venv", "node_modules", "/tmp/golem/cargo"]
    assert conventions.test == ["python3 -m pytest", "cargo test"]
    assert conventions.build == ["npm run build"]
    assert set(conventions.env) == {"VIRTUAL_ENV", "PATH", "CARGO_HOME"}


def test_makefile_and_justfile_targets_outrank_ecosystem_defaults(make_repo: MakeRepo) -> None:
    makefile = (
        "VENV := .venv\n.PHONY: test lint build\n\n"
        "lint build:: deps\n\truff check .\n\n"
        "test: lint\n\tpytest\n\nclean:\n\trm -rf build\n"
    )
    make = make_repo({"Makefile": makefile, "go.mod": "module x\n"})
    just = make_repo(
        {
            "justfile": "default:\n  just --list\n\ncheck *args:\n  cargo test {{args}}\n",
            "Cargo.toml": CARGO,
        },
        name="just",
    )

    assert (load_conventions(make).lint, load_conventions(make).test) == (
        ["make lint"],
        ["make test"],
    )
    assert load_conventions(make).install == ["go mod download"]
    assert load_conventions(just).test == ["just check"]
    assert load_conventions(just).install == ["cargo fetch"]


def test_pre_commit_is_the_lint_when_nothing_more_trusted_names_one(make_repo: MakeRepo) -> None:
    config = (
        "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.6.0\n"
        "    hooks:\n      - id: ruff\n"
    )
    repo = make_repo({".pre-commit-config.yaml": config, "test_a.py": "import unittest\n"})

    conventions = load_conventions(repo)

    assert conventions.lint == ["pre-commit run --all-files"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install pre-commit",
        "/tmp/golem/venv/bin/pre-commit install-hooks",
    ]
    assert conventions.env["PRE_COMMIT_HOME"] == "/tmp/golem/pre-commit"
    assert conventions.cache == ["/tmp/golem/venv", "/tmp/golem/pre-commit"]
    assert "github.com" in conventions.registries


def test_tox_and_nox_come_after_the_ecosystems_defaults(make_repo: MakeRepo) -> None:
    tox = (
        "[tox]\nenvlist = py311, lint\n\n[base]\ncommands = pytest\n\n"
        "[testenv]\ncommands = {[base]commands}\n\n[testenv:lint]\n"
    )
    with_tests = make_repo({"tox.ini": tox, "tests/test_a.py": "import pytest\n"})
    only_tox = make_repo({"tox.ini": tox}, name="only-tox")
    noxfile = (
        "import nox\n\n@nox.session(python=['3.11'])\ndef tests(session):\n"
        "    session.run('pytest')\n\n@nox.session(name='lint')\ndef run_linters(session):\n"
        "    session.run('ruff')\n"
    )
    only_nox = make_repo({"noxfile.py": noxfile}, name="only-nox")

    assert load_conventions(with_tests).test == ["python3 -m pytest"]
    assert load_conventions(with_tests).lint == ["tox -e lint"]
    assert load_conventions(only_tox).test == ["tox"]
    assert (load_conventions(only_nox).lint, load_conventions(only_nox).test) == (
        ["nox -s lint"],
        ["nox -s tests"],
    )
    assert "/tmp/golem/venv/bin/python -m pip install tox" in load_conventions(only_tox).install
    assert load_conventions(only_tox).cache == ["/tmp/golem/venv"]
    assert load_conventions(only_tox).ecosystems == ["python"]


def test_tox_environments_commands_run_from_the_venv(make_repo: MakeRepo) -> None:
    tox = """\
[tox]
envlist = py3{9,10,11}, lint

[testenv]
deps = pytest
commands =
    {envpython} -m pytest --doctest-modules {posargs:src tests}
    - coverage report

[testenv:lint]
deps = ruff
commands = ruff check {toxinidir}/src
"""
    repo = make_repo({"tox.ini": tox, "tests/test_a.py": "import pytest\n"})

    conventions = load_conventions(repo)

    assert conventions.test == ["python3 -m pytest --doctest-modules src tests"]
    assert conventions.lint == ["ruff check src"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install pytest",
        "/tmp/golem/venv/bin/python -m pip install ruff",
    ]
    assert [f.why for f in conventions.findings if f.step == "test" and f.used] == [
        "[testenv] commands, run from the venv"
    ]


def test_detection_only_reads_files(make_repo: MakeRepo, tmp_path: Path) -> None:
    proof = tmp_path / "ran"
    repo = make_repo(
        {
            "noxfile.py": f"open({str(proof)!r}, 'w').close()\n",
            "Makefile": f"$(shell touch {proof})\ntest:\n\ttrue\n",
            "package.json": json.dumps({"scripts": {"test": f"touch {proof}"}}),
            ".github/workflows/ci.yml": (
                "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
                f"      - run: touch {proof}\n"
            ),
        }
    )

    assert load_conventions(repo).test == ["make test"]
    assert not proof.exists()


def test_nothing_found_gives_empty_conventions_that_say_so(make_repo: MakeRepo) -> None:
    empty = make_repo({"README.md": "# hi\n"})
    broken = make_repo({"pyproject.toml": "[project\n", "package.json": "{nope"}, name="broken")

    assert load_conventions(empty) == RepoConventions(
        source=(
            "no commands found: no .golem.toml, and no CI workflow, task runner or ecosystem "
            "default names lint, build or test"
        )
    )
    assert not load_conventions(broken).verifies


def test_files_linked_out_of_the_repository_are_not_read(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.yml"
    outside.write_text("on: push\njobs:\n  t:\n    steps:\n      - run: pytest --evil\n")
    repo = make_repo({"README.md": "x"})
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").symlink_to(outside)
    (repo / "Makefile").symlink_to(outside)

    assert not load_conventions(repo).verifies


def test_a_target_run_through_poetry_or_uv_runs_its_recipe_from_the_venv(
    make_repo: MakeRepo,
) -> None:
    makefile = (
        ".PHONY: lint test\n"
        "lint:\n\t@poetry run ruff check src\n\tpoetry run mypy src\n\n"
        "test: install\n\t-uv run --frozen pytest -x tests\n\n"
        "build:\n\tpoetry run $(PYTHON) -m build\n"
    )
    workflow = (
        "on: [push]\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n"
    )
    repo = make_repo(
        {
            "Makefile": makefile,
            ".github/workflows/ci.yml": workflow,
            "pyproject.toml": (
                '[tool.poetry]\nname = "x"\n[tool.poetry.group.dev.dependencies]\n'
                'pytest = "^8"\nruff = "*"\nmypy = "*"\n'
            ),
            "tests/test_x.py": "def test_x(): ...\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["pytest -x tests"]  # from the CI's `make test`, as written
    assert conventions.lint == ["ruff check src", "mypy src"]
    assert conventions.build == ["make build"]  # make's variables are known only to make
    assert conventions.install[1] == (
        "/tmp/golem/venv/bin/python -m pip install -e . pytest ruff mypy"
    )
