"""CI definitions: GitHub Actions workflows and GitLab CI, read the way the CI runs them."""

from __future__ import annotations

from golem.checks import load_conventions
from tests.checks.conftest import MakeRepo

PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "pluggy-like"
version = "1.0"

[project.optional-dependencies]
testing = ["pytest", "pytest-benchmark"]
"""

# In the spirit of pluggy's and humanize's workflows: a matrix, a multi-line run, setup and
# caching actions, a publish job and a step that needs a secret.
WORKFLOW = """\
name: main
on:
  push:
    branches: [main]
  pull_request:
env:
  FORCE_COLOR: "1"
  PYTEST_ADDOPTS: "-p no:cacheprovider"
jobs:
  test:
    runs-on: ${{ matrix.os }}
    strategy:
      matrix:
        os: [ubuntu-latest, windows-latest]
        python-version: ["3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
          cache: pip
      - name: Install
        run: |
          python -m pip install --upgrade pip
          python -m pip install -e .[testing]
      - name: Test
        run: python${{ matrix.python-version }} -m pytest --durations=10 $PYTEST_ADDOPTS
      - name: Test on Windows
        if: runner.os == 'Windows'
        run: python -m pytest -p no:xdist
      - name: Upload coverage
        run: codecov --token ${{ secrets.CODECOV_TOKEN }}
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install ruff==0.6.0 mypy
      - run: |
          # style first
          ruff check . && ruff format --check .
          mypy src \\
            --strict
      - name: Typos
        run: typos --config ${{ github.workspace }}/typos.toml
  deploy:
    needs: [test]
    runs-on: ubuntu-latest
    if: startsWith(github.ref, 'refs/tags/')
    steps:
      - run: python -m build && twine upload dist/*
"""


def test_a_workflows_own_commands_win_over_the_defaults_in_the_venv_form(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            ".github/workflows/main.yml": WORKFLOW,
            "pyproject.toml": PYPROJECT,
            "tests/test_x.py": "def test_x(): ...\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["python3 -m pytest --durations=10 -p no:cacheprovider"]
    assert conventions.lint == ["ruff check .", "ruff format --check .", "mypy src --strict"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e '.[testing]'",
        "/tmp/golem/venv/bin/python -m pip install ruff==0.6.0 mypy",
    ]
    assert conventions.ecosystems == ["python"]
    used = {(f.command, f.origin, f.why) for f in conventions.findings if f.used}
    assert (
        "python3 -m pytest --durations=10 -p no:cacheprovider",
        ".github/workflows/main.yml",
        "job test, step 4: pytest",
    ) in used
    dropped = {f.command: f.why for f in conventions.findings if not f.used}
    assert dropped["typos --config ${{ github.workspace }}/typos.toml"] == (
        "job lint, step 4: uses ${{ github.workspace }}, known only on the CI runner"
    )
    assert "python3 -m pytest" in dropped  # the default, outranked by the workflow
    assert not any("twine" in c or "codecov" in c or "build" in c for c in used)
    assert conventions.source == "detected: .github/workflows/main.yml (lint, test)"


def test_a_matrix_key_that_changes_what_runs_gives_one_command_per_value(
    make_repo: MakeRepo,
) -> None:
    workflow = """\
on: [push, pull_request]
jobs:
  check:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        task: [lint, test]
        include:
          - task: build
    steps:
      - run: pnpm install --frozen-lockfile
      - run: pnpm run ${{ matrix.task }}
        working-directory: web
"""
    repo = make_repo(
        {
            ".github/workflows/ci.yaml": workflow,
            "web/package.json": '{"scripts": {"test": "vitest run"}}',
            "web/pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.lint == ["cd web && pnpm run lint"]
    assert conventions.test == ["cd web && pnpm run test"]
    assert conventions.build == ["cd web && pnpm run build"]
    assert conventions.install == [
        "command -v pnpm >/dev/null || npm install --prefix /tmp/golem/node-tools --no-audit "
        "--no-fund pnpm@9",
        "pnpm install --frozen-lockfile",
    ]
    assert conventions.ecosystems == ["node"]


def test_install_steps_run_where_the_workflow_runs_them(make_repo: MakeRepo) -> None:
    workflow = """\
on: pull_request
defaults:
  run:
    working-directory: frontend
jobs:
  unit:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-node@v4
      - run: npm ci
      - run: npx vitest run
      - run: npm publish
      - run: |
          cd dist/pkg-*
          npm test
"""
    repo = make_repo(
        {
            ".github/workflows/unit.yml": workflow,
            "frontend/package.json": "{}",
            "frontend/package-lock.json": "{}",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install == ["cd frontend && npm ci"]
    assert conventions.test == ["cd frontend && npx vitest run"]
    assert conventions.cache == ["frontend/node_modules"]
    assert conventions.cache_keys == ["frontend/package.json", "frontend/package-lock.json"]
    assert conventions.registries == ["registry.npmjs.org"]


def test_workflows_that_do_not_run_on_changes_and_other_platforms_are_left_out(
    make_repo: MakeRepo,
) -> None:
    release = (
        "on:\n  release:\n    types: [published]\njobs:\n  t:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: make test\n"
    )
    windows = (
        "on: push\njobs:\n  w:\n    runs-on: windows-latest\n    steps:\n"
        "      - run: pytest\n        shell: pwsh\n"
    )
    repo = make_repo(
        {
            ".github/workflows/release.yml": release,
            ".github/workflows/windows.yml": windows,
            ".github/workflows/broken.yml": "on: [push\njobs: {",
            ".github/workflows/odd.yml": "on: 3\njobs:\n  t:\n    steps:\n      - run: pytest\n",
            ".github/workflows/odder.yaml": "on: push\njobs: [1, {steps: 3}]\n",
            "go.mod": "module example.com/x\n\ngo 1.21\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["go test ./..."]
    assert conventions.source == "detected: ecosystem default (test)"


def test_uv_sync_and_uv_run_become_the_venv_and_plain_commands(make_repo: MakeRepo) -> None:
    pyproject = (
        PYPROJECT + '\n[dependency-groups]\ndev = ["pytest>=8", "coverage"]\ndocs = ["sphinx"]\n'
    )
    workflow = """\
on: [pull_request]
jobs:
  tests:
    runs-on: ubuntu-latest
    steps:
      - uses: astral-sh/setup-uv@v3
      - run: uv sync --extra testing --frozen
      - run: uv run --frozen coverage run -m pytest -x
      - run: uv run tox -e ${{ matrix.env }}
"""
    repo = make_repo(
        {
            ".github/workflows/t.yml": workflow,
            "pyproject.toml": pyproject,
            "uv.lock": "version = 1\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install[:2] == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e '.[testing]' 'pytest>=8' coverage",
    ]
    assert conventions.test == ["python3 -m pytest -x"]
    assert "uv.lock" in conventions.cache_keys
    dropped = [f for f in conventions.findings if not f.used and "tox" in f.command]
    assert [f.why for f in dropped] == [
        "job tests, step 4: uses ${{ matrix.env }}, known only on the CI runner"
    ]


def test_gitlab_ci_scripts_are_read_and_deploy_stages_left_out(make_repo: MakeRepo) -> None:
    pipeline = """\
stages: [test, deploy]
variables:
  CARGO_TERM_COLOR: always
default:
  image: rust:1.80
.template: &t
  script: [cargo build]
test:
  stage: test
  before_script:
    - rustup component add clippy
  script:
    - cargo fetch
    - cargo clippy --all-targets -- -D warnings
    - cargo test --workspace
pages:
  stage: deploy
  script: [cargo doc]
publish:
  stage: deploy
  script: [cargo publish --token $CRATES_TOKEN]
"""
    repo = make_repo(
        {".gitlab-ci.yml": pipeline, "Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\n'}
    )

    conventions = load_conventions(repo)

    assert conventions.lint == ["cargo clippy --all-targets -- -D warnings"]
    assert conventions.test == ["cargo test --workspace"]
    assert conventions.install == ["cargo fetch"]
    assert conventions.env == {"CARGO_HOME": "/tmp/golem/cargo"}
    assert conventions.ecosystems == ["rust"]


def test_env_expressions_resolve_from_the_jobs_literal_env(make_repo: MakeRepo) -> None:
    # ripgrep's way: the cargo command and its flags come from the job's env
    workflow = """\
on: [push, pull_request]
jobs:
  test:
    runs-on: ${{ matrix.os }}
    env:
      CARGO: cargo
      TARGET_FLAGS:
    strategy:
      matrix:
        os: [ubuntu-latest, macos-latest]
    steps:
      - run: echo "cargo command is ${{ env.CARGO }}"
      - run: ${{ env.CARGO }} build --verbose --workspace ${{ env.TARGET_FLAGS }}
      - run: ${{ env.CARGO }} test --verbose --workspace ${{ env.TARGET_FLAGS }}
  docs:
    runs-on: ubuntu-latest
    steps:
      - run: cargo doc --no-deps
"""
    repo = make_repo({".github/workflows/ci.yml": workflow, "Cargo.toml": "[package]\n"})

    conventions = load_conventions(repo)

    assert conventions.build == ["cargo build --verbose --workspace"]
    assert conventions.test == ["cargo test --verbose --workspace"]
    assert conventions.install == ["cargo fetch"]


def test_a_jobs_installs_go_with_its_checks_and_release_workflows_are_left_out(
    make_repo: MakeRepo,
) -> None:
    # requests' way: a main test job, a job testing against an old urllib3, a publish
    # workflow that runs on pushes too
    tests = """\
on: [push, pull_request]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: python -m pip install pip==26.0.1
      - run: pip install -r requirements-dev.txt
      - run: make ci
  urllib3:
    runs-on: ubuntu-latest
    steps:
      - run: pip install 'urllib3<2'
      - run: make ci
"""
    publish = """\
name: Publish to PyPI
on:
  push:
    tags: ["*"]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: pip install build==1.4.0
      - run: python -m build && pytest
"""
    repo = make_repo(
        {
            ".github/workflows/run-tests.yml": tests,
            ".github/workflows/publish.yml": publish,
            "Makefile": "ci:\n\tpython -m pytest tests --junitxml=report.xml\n",
            "requirements-dev.txt": "pytest\n",
            "setup.py": "from setuptools import setup\nsetup()\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["make ci"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -r requirements-dev.txt",
        "/tmp/golem/venv/bin/python -m pip install -e . -r requirements-dev.txt",
    ]
    unused = {f.command: f.why for f in conventions.findings if not f.used}
    assert unused["/tmp/golem/venv/bin/python -m pip install 'urllib3<2'"] == (
        "job urllib3, step 1: into the venv; not used: none of the chosen checks comes from "
        "this job"
    )
    assert not any("build" in f.command for f in conventions.findings)


def test_hatch_scripts_run_as_the_commands_they_stand_for(make_repo: MakeRepo) -> None:
    pyproject = PYPROJECT + (
        "\n[tool.hatch.envs.test]\n"
        'dependencies = ["pytest", "pytest-cov"]\n'
        "[tool.hatch.envs.test.scripts]\n"
        'test = "pytest {args:tests}"\n'
        'cov = ["test --cov=src", "coverage report"]\n'
        "[tool.hatch.envs.lint.scripts]\n"
        'typing = "mypy --install-types --non-interactive {args:src}"\n'
    )
    workflow = """\
on: [push, pull_request]
jobs:
  run:
    runs-on: ubuntu-latest
    steps:
      - run: pip install --upgrade hatch
      - run: hatch run test:cov
      - run: hatch run lint:typing
"""
    repo = make_repo({".github/workflows/test.yml": workflow, "pyproject.toml": pyproject})

    conventions = load_conventions(repo)

    assert conventions.test == ["pytest tests"]
    assert conventions.lint == ["mypy --install-types --non-interactive src"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install --upgrade hatch",
        "/tmp/golem/venv/bin/python -m pip install -e '.[testing]' pytest pytest-cov",
        "/tmp/golem/venv/bin/python -m pip install mypy",
    ]


def test_local_composite_actions_and_reusable_workflows_are_read_where_used(
    make_repo: MakeRepo,
) -> None:
    caller = """\
on: [pull_request]
jobs:
  tests:
    uses: ./.github/workflows/tests.yml
  elsewhere:
    uses: octo/shared/.github/workflows/lint.yml@v1
  loop:
    uses: ./.github/workflows/ci.yml
"""
    called = """\
on: workflow_call
jobs:
  unit:
    runs-on: ubuntu-latest
    steps:
      - uses: ./.github/actions/setup
      - run: python -m pytest -n auto
"""
    action = """\
name: setup
runs:
  using: composite
  steps:
    - uses: actions/setup-python@v5
    - run: pip install -e .[testing] pytest-xdist
      shell: bash
"""
    repo = make_repo(
        {
            ".github/workflows/ci.yml": caller,
            ".github/workflows/tests.yml": called,
            ".github/actions/setup/action.yml": action,
            "pyproject.toml": PYPROJECT,
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["python3 -m pytest -n auto"]
    assert conventions.install[:2] == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e '.[testing]' pytest-xdist",
    ]
    install = next(f for f in conventions.findings if "pytest-xdist" in f.command)
    assert (install.origin, install.why) == (
        ".github/workflows/tests.yml",
        "job unit, step 1.2: into the venv",
    )


def test_the_files_a_ci_install_reads_key_the_cache(make_repo: MakeRepo) -> None:
    workflow = """\
on: [push]
jobs:
  api:
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: backend
    steps:
      - run: pip install -e .[testing] -r requirements/ci.txt --constraint=constraints.txt
      - run: pytest
"""
    repo = make_repo(
        {
            ".github/workflows/api.yml": workflow,
            "backend/pyproject.toml": PYPROJECT,
            "backend/requirements/ci.txt": "pytest\n",
            "backend/constraints.txt": "pytest<9\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "cd backend && /tmp/golem/venv/bin/python -m pip install -e '.[testing]' "
        "-r requirements/ci.txt --constraint=constraints.txt",
    ]
    assert conventions.test == ["cd backend && pytest"]
    assert conventions.cache == ["/tmp/golem/venv"]
    assert conventions.cache_keys == [
        "backend/pyproject.toml",
        "backend/requirements/ci.txt",
        "backend/constraints.txt",
    ]


def test_tools_run_in_throwaway_environments_run_from_the_venv(make_repo: MakeRepo) -> None:
    workflow = """\
on: [push]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: uv tool install mypy
      - run: uvx --from ruff==0.6.0 ruff check .
      - run: mypy src
"""
    repo = make_repo({".github/workflows/lint.yml": workflow, "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    assert conventions.lint == ["ruff check .", "mypy src"]
    assert conventions.install[1:] == [
        "/tmp/golem/venv/bin/python -m pip install mypy",
        "/tmp/golem/venv/bin/python -m pip install -e '.[testing]'",
        "/tmp/golem/venv/bin/python -m pip install ruff",
    ]


def test_check_actions_are_the_commands_they_run_with_their_inputs(make_repo: MakeRepo) -> None:
    workflow = """\
on: [pull_request]
jobs:
  style:
    runs-on: ubuntu-latest
    steps:
      - uses: astral-sh/ruff-action@v3
        with:
          args: "format --check"
          src: "./src"
      - uses: psf/black@stable
      - uses: pre-commit/action@v3.0.1
        with:
          extra_args: ${{ matrix.hooks }}
"""
    repo = make_repo({".github/workflows/style.yml": workflow, "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    assert conventions.lint == [
        "ruff format --check ./src",
        "black --check --diff .",
        "pre-commit run --show-diff-on-failure --color=always --all-files",
    ]
    assert "/tmp/golem/venv/bin/python -m pip install ruff black pre-commit" in conventions.install
    assert "/tmp/golem/venv/bin/pre-commit install-hooks" in conventions.install


def test_pyright_fetches_its_npm_package_at_install_where_it_is_kept(make_repo: MakeRepo) -> None:
    workflow = """\
on: [push]
jobs:
  typecheck:
    runs-on: ubuntu-latest
    steps:
      - run: python -m pip install -e . pyright
      - run: python -m pyright src/
"""
    repo = make_repo({".github/workflows/typecheck.yml": workflow, "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    assert conventions.lint == ["python3 -m pyright src/"]
    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/python -m pip install -e . pyright",
        "/tmp/golem/venv/bin/python -m pip install -e '.[testing]'",
        "/tmp/golem/venv/bin/pyright --version",
    ]
    assert conventions.cache == ["/tmp/golem/venv", "/tmp/golem/pyright"]
    assert conventions.env["PYRIGHT_PYTHON_CACHE_DIR"] == "/tmp/golem/pyright"
