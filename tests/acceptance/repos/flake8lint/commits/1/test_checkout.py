"""Nothing git ignores is in the checkout but what the tests leave:
the tools that lint it (flake8 ., ruff check ., mypy ., eslint .,
prettier --check .) see the tree the repository's CI sees."""

import subprocess

LEFT_BY_TESTS = (".pytest_cache/", "__pycache__/")


def test_the_checkout_holds_only_the_repositorys_files() -> None:
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    strangers = [
        line
        for line in listed
        if line.startswith("!!") and not line[3:].endswith(LEFT_BY_TESTS)
    ]
    assert strangers == []
