"""`golem checks detect` as a user runs it: a real process over a real repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from golem.checks import RepoConventions, load_conventions
from tests.context.conftest import write_tree

WORKFLOW = """\
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-go@v5
      - run: go mod download
      - run: go vet ./...
      - run: go test -race ./...
      - run: curl -T report ${{ secrets.UPLOAD_URL }} && go test ./...
"""
REPO = {
    ".github/workflows/ci.yml": WORKFLOW,
    "go.mod": "module example.com/x\n\ngo 1.21\n",
    "go.sum": "",
    "x.go": "package x\n",
}


def golem(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "golem", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=60, check=False,
    )  # fmt: skip


def test_detect_prints_each_command_with_its_origin_and_why(tmp_path: Path) -> None:
    write_tree(tmp_path, REPO)

    done = golem("checks", "detect", "--repo", str(tmp_path), cwd=Path.cwd())

    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert "lint go vet ./... .github/workflows/ci.yml job test, step 3: go vet" in lines
    assert "test go test -race ./... .github/workflows/ci.yml job test, step 4: go test" in lines
    assert (
        "install go mod download .github/workflows/ci.yml job test, step 2: go mod download"
        in lines
    )
    assert any(line.startswith("test go test ./... ecosystem default") for line in lines)
    assert any("known only on the CI runner" in line for line in lines)
    assert "ecosystems: go" in lines
    assert "install caches: /tmp/golem/go (keyed by go.mod, go.sum)" in lines
    assert not (tmp_path / ".golem.toml").exists()
    as_json = golem("checks", "detect", "--json", "--repo", str(tmp_path), cwd=Path.cwd())
    assert RepoConventions.model_validate_json(as_json.stdout) == load_conventions(tmp_path)


def test_write_makes_a_golem_toml_that_loads_back_the_same_and_is_never_overwritten(
    tmp_path: Path,
) -> None:
    write_tree(tmp_path, REPO)
    detected = load_conventions(tmp_path)

    written = golem("checks", "detect", "--write", cwd=tmp_path)
    again = golem("checks", "detect", "--write", cwd=tmp_path)
    (tmp_path / ".golem.toml").write_text("# mine\n")
    kept = golem("checks", "detect", "--write", cwd=tmp_path)
    mine = (tmp_path / ".golem.toml").read_text()
    forced = golem("checks", "detect", "--write", "--force", cwd=tmp_path)

    assert written.returncode == 0, written.stderr
    assert "wrote" in written.stdout
    loaded = load_conventions(tmp_path)
    assert loaded.source == "from .golem.toml"
    for field in ("install", "lint", "build", "test", "cache", "cache_keys", "registries", "env"):
        assert getattr(loaded, field) == getattr(detected, field), field
    assert loaded.test == ["go test -race ./..."]
    assert (again.returncode, kept.returncode) == (2, 2)
    assert "exists and was not replaced; pass --force" in kept.stderr
    assert mine == "# mine\n"
    assert forced.returncode == 0
    assert load_conventions(tmp_path).lint == ["go vet ./..."]


def test_detect_says_when_a_golem_toml_is_what_runs_use(tmp_path: Path) -> None:
    write_tree(tmp_path, {**REPO, ".golem.toml": '[commands]\ntest = "make check"\n'})

    done = golem("checks", "detect", "--repo", str(tmp_path), cwd=Path.cwd())

    assert done.returncode == 0
    assert f"note: {tmp_path / '.golem.toml'} exists; runs use it" in " ".join(done.stdout.split())


def test_detect_says_when_nothing_would_verify_a_change_and_where_to_name_one(
    tmp_path: Path,
) -> None:
    write_tree(tmp_path, {"README.md": "# notes\n"})

    done = golem("checks", "detect", "--repo", str(tmp_path), cwd=Path.cwd())

    assert done.returncode == 0
    assert "nothing here verifies a change: a run would end unverified" in done.stdout
    assert "Name the test command in .golem.toml's [commands] (--write" in done.stdout


def test_detect_on_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    done = golem("checks", "detect", "--repo", str(tmp_path / "nope"), cwd=tmp_path)

    assert done.returncode == 2
    assert "is not a directory; give the repository's with --repo PATH" in done.stderr
