"""Services a repository's checks need, found as its CI and task runners declare them:
GitHub Actions ``services:`` of the job a check comes from, GitLab CI ``services:``,
compose files brought up by a CI step or a task runner's recipe, and container libraries
among the declared test dependencies."""

from __future__ import annotations

from golem.checks import Service, load_conventions
from tests.checks.conftest import MakeRepo

PYPROJECT = """\
[project]
name = "shop"
version = "1.0"

[project.optional-dependencies]
test = ["pytest", "psycopg[binary]"]
"""

# In the shape of many Django and FastAPI projects' workflows: a postgres and a redis
# service with health options, a matrix-chosen image, and a job no check comes from.
WORKFLOW = """\
name: ci
on: [push, pull_request]
env:
  PG_PASSWORD: secret
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        postgres: ["16"]
    services:
      postgres:
        image: postgres:${{ matrix.postgres }}
        env:
          POSTGRES_PASSWORD: ${{ env.PG_PASSWORD }}
          POSTGRES_DB: shop
          POSTGRES_USER: ${{ secrets.DB_USER }}
        ports:
          - 5432:5432
        options: >-
          --health-cmd "pg_isready -U postgres"
          --health-interval 10s
          --health-timeout 5s
          --health-retries 5
      redis:
        image: redis:7
        ports: ["6379"]
        options: --health-cmd="redis-cli ping"
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e .[test]
      - run: pytest -q
  docs:
    runs-on: ubuntu-latest
    services:
      search:
        image: elasticsearch:8
    steps:
      - run: mkdocs build
"""


def test_github_services_of_the_checks_job_are_read_with_env_ports_and_health(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({".github/workflows/ci.yml": WORKFLOW, "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    assert conventions.test == ["pytest -q"]
    assert conventions.services == [
        Service(
            name="postgres",
            image="postgres:16",
            env={"POSTGRES_PASSWORD": "secret", "POSTGRES_DB": "shop"},
            ports=[5432],
            health="pg_isready -U postgres",
            origin=".github/workflows/ci.yml",
            why="job test, service postgres",
        ),
        Service(
            name="redis",
            image="redis:7",
            ports=[6379],
            health="redis-cli ping",
            origin=".github/workflows/ci.yml",
            why="job test, service redis",
        ),
    ]
    assert conventions.needs_containers
    assert any("postgres" in need for need in conventions.containers)


def test_services_of_a_job_no_chosen_check_comes_from_are_not_needed(
    make_repo: MakeRepo,
) -> None:
    workflow = WORKFLOW.replace("      - run: pytest -q\n", "")
    repo = make_repo(
        {
            ".github/workflows/ci.yml": workflow,
            "pyproject.toml": PYPROJECT,
            "tests/test_x.py": "def test_x():\n    pass\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test  # pytest, the ecosystem's default, from no job
    assert conventions.services == []
    assert not conventions.needs_containers


def test_a_service_image_only_the_runner_knows_still_needs_containers(
    make_repo: MakeRepo,
) -> None:
    workflow = WORKFLOW.replace("postgres:${{ matrix.postgres }}", "${{ vars.PG_IMAGE }}")
    repo = make_repo({".github/workflows/ci.yml": workflow, "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    postgres = conventions.services[0]
    assert postgres.image == ""
    assert "vars.PG_IMAGE" in postgres.why
    assert "known only on the CI runner" in postgres.why
    assert conventions.needs_containers


def test_gitlab_services_as_strings_and_mappings_with_alias_and_variables(
    make_repo: MakeRepo,
) -> None:
    pipeline = """\
services:
  - redis:7
test:
  image: python:3.12
  services:
    - name: postgres:16
      alias: db
      variables:
        POSTGRES_PASSWORD: pw
    - docker.io/library/mysql:8
  script:
    - pip install -e .[test]
    - pytest
lint:
  script: [ruff check .]
"""
    repo = make_repo({".gitlab-ci.yml": pipeline, "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    # a job's own services replace the pipeline's: lint gets redis, test does not
    assert [(s.name, s.image, s.env, s.why) for s in conventions.services] == [
        ("db", "postgres:16", {"POSTGRES_PASSWORD": "pw"}, "job test, service db"),
        ("mysql", "docker.io/library/mysql:8", {}, "job test, service mysql"),
        ("redis", "redis:7", {}, "job lint, service redis"),
    ]
    assert all(s.origin == ".gitlab-ci.yml" for s in conventions.services)


def test_a_compose_file_brought_up_by_the_checks_ci_job_is_needed(make_repo: MakeRepo) -> None:
    workflow = """\
on: pull_request
jobs:
  integration:
    runs-on: ubuntu-latest
    steps:
      - run: docker compose -f deploy/compose.test.yml up -d --wait
      - run: go test ./...
"""
    repo = make_repo(
        {
            ".github/workflows/ci.yml": workflow,
            "go.mod": "module example.com/x\n\ngo 1.22\n",
            "deploy/compose.test.yml": "services:\n  db:\n    image: postgres:16\n",
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["go test ./..."]
    assert conventions.compose == ["deploy/compose.test.yml"]
    assert conventions.needs_containers


def test_a_compose_file_the_makefile_test_target_brings_up_is_needed(make_repo: MakeRepo) -> None:
    makefile = (
        "up:\n\tdocker-compose up -d\n\n"
        "test: up\n\tpytest -q\n\n"
        "clean:\n\tdocker compose -f other.yml down\n"
    )
    repo = make_repo(
        {
            "Makefile": makefile,
            "docker-compose.yml": "services:\n  cache:\n    image: redis:7\n",
            "other.yml": "services: {}\n",
            "pyproject.toml": PYPROJECT,
        }
    )

    conventions = load_conventions(repo)

    assert conventions.test == ["make test"]
    assert conventions.compose == ["docker-compose.yml"]
    assert conventions.needs_containers


def test_testcontainers_or_docker_among_test_dependencies_needs_containers(
    make_repo: MakeRepo,
) -> None:
    for name, files in {
        "python": {
            "pyproject.toml": PYPROJECT.replace('"pytest"', '"pytest", "testcontainers[postgres]"')
        },
        "requirements": {"requirements-dev.txt": "pytest\ndocker>=7\n"},
        "node": {
            "package.json": '{"scripts": {"test": "jest"}, '
            '"devDependencies": {"@testcontainers/postgresql": "10.0.0"}}'
        },
        "go": {
            "go.mod": "module x\n\ngo 1.22\n\nrequire github.com/testcontainers/"
            "testcontainers-go v0.31.0\n"
        },
    }.items():
        repo = make_repo(files, name=name, use_git=False)

        conventions = load_conventions(repo)

        assert conventions.needs_containers, name
        assert conventions.services == [], name


def test_a_project_without_services_does_not_need_containers(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "pyproject.toml": PYPROJECT.replace('"pytest"', '"pytest", "dockerfile-parse"'),
            "tests/test_x.py": "def test_x():\n    pass\n",
        }
    )

    conventions = load_conventions(repo)

    assert not conventions.needs_containers
    assert conventions.containers == []
