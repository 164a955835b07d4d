"""`golem agent` and `golem trajectory show` as a user runs them, in real boxes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.invoke import golem

pytestmark = pytest.mark.bwrap

EXAMPLES = Path(__file__).parents[2] / "examples"
FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    target = tmp_path / "calculator"
    shutil.copytree(EXAMPLES / "calculator", target)
    return target


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def unittest_passes(repo: Path) -> bool:
    done = subprocess.run(
        ["python3", "-B", "-m", "unittest"], cwd=repo, capture_output=True, check=False
    )
    return done.returncode == 0


def test_agent_fixes_a_directory_and_changes_only_what_it_edited(
    golem_env: dict[str, str],
    repo: Path,
) -> None:
    before = snapshot(repo)
    done = golem(golem_env, "agent", "--model", FIX, "--workspace", str(repo), "Fix the tests")
    assert done.returncode == 0, done.stderr
    diff = done.stdout.decode()
    assert "-    return a - b\n+    return a + b\n" in diff
    after = snapshot(repo)
    assert [p for p in after if after[p] != before.get(p)] == ["calculator.py"]
    assert set(after) == set(before)  # no __pycache__ or anything else came back
    assert unittest_passes(repo)
    assert b"done after 5 turns" in done.stderr
    assert b"1 file(s) changed" in done.stderr


def test_links_the_directory_already_had_do_not_stop_the_copy_back(
    golem_env: dict[str, str],
    repo: Path,
    tmp_path: Path,
) -> None:
    """A link out of the directory, an absolute one and a hard-linked pair were there
    before the agent: they are no change, so the copy-back neither refuses nor touches
    them."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "shared").symlink_to(outside)
    (repo / "python").symlink_to("/usr/bin/python3")
    (repo / "copy.py").hardlink_to(repo / "calculator.py")
    done = golem(golem_env, "agent", "--model", FIX, "--workspace", str(repo), "Fix the tests")
    assert done.returncode == 0, done.stderr
    assert (repo / "shared").readlink() == outside
    assert (repo / "python").readlink() == Path("/usr/bin/python3")
    assert "return a + b" in (repo / "calculator.py").read_text()
    assert list(outside.iterdir()) == []


def test_a_real_repository_works_and_its_credentials_never_enter_the_box(
    golem_env: dict[str, str],
    repo: Path,
    tmp_path: Path,
) -> None:
    """A person's own repository: a husky hooks path and an actions/checkout token in its
    .git/config, a nested clone with its own .git. The agent works, sees no token, and
    the nested repository's .git is the host's, not a refusal."""
    token = "ghs_checkoutToken0123456789"  # noqa: S105 - a test value
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git = ["git", "-C", str(repo), "config"]
    subprocess.run([*git, "core.hooksPath", ".husky"], check=True)
    subprocess.run(
        [*git, "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {token}"], check=True
    )
    subprocess.run([*git, "remote.origin.url", f"https://x:{token}@github.com/o/r.git"], check=True)
    subprocess.run(["git", "init", "-q", str(repo / "vendor" / "lib")], check=True)
    (repo / "vendor" / "lib" / "lib.py").write_text("x = 1\n")
    script = tmp_path / "look.yaml"
    script.write_text(
        "turns:\n"
        "  - tool_calls: [{name: bash, arguments: {command: 'cat .git/config; git remote -v'}}]\n"
        "  - tool_calls: [{name: edit, arguments: {path: calculator.py, "
        "old: '    return a - b', new: '    return a + b'}}]\n"
        "  - tool_calls: [{name: finish, arguments: {summary: fixed}}]\n"
    )
    recorded = tmp_path / "run.jsonl"
    done = golem(
        golem_env, "agent", "--model", f"scripted:{script}", "--trajectory", str(recorded),
        "--workspace", str(repo), "Fix it",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "return a + b" in (repo / "calculator.py").read_text()
    assert token not in recorded.read_text()
    assert "https://github.com/o/r.git" in recorded.read_text()  # the URL, without its password
    assert (repo / ".git" / "config").read_text().count(token) == 2  # the host's, untouched
    assert (repo / "vendor" / "lib" / ".git").is_dir()


def test_agent_dry_run_shows_the_diff_and_changes_nothing(
    golem_env: dict[str, str],
    repo: Path,
) -> None:
    before = snapshot(repo)
    done = golem(
        golem_env, "agent", "--dry-run", "--model", FIX, "--workspace", str(repo), "Fix it"
    )
    assert done.returncode == 0
    assert b"+    return a + b" in done.stdout
    assert snapshot(repo) == before
    assert b"dry run" in done.stderr


def test_files_git_ignores_do_not_come_back(
    golem_env: dict[str, str],
    repo: Path,
    tmp_path: Path,
) -> None:
    (repo / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    script = tmp_path / "build.yaml"
    script.write_text(
        "turns:\n"
        "  - tool_calls:\n"
        "      - {name: bash, arguments: {command: 'mkdir -p build && echo o > build/out "
        "&& echo n > notes.txt'}}\n"
        "  - tool_calls: [{name: finish, arguments: {summary: built}}]\n"
    )
    done = golem(
        golem_env, "agent", "--model", f"scripted:{script}", "--workspace", str(repo), "Build"
    )
    assert done.returncode == 0, done.stderr
    assert (repo / "notes.txt").read_text() == "n\n"
    assert not (repo / "build").exists()


def test_a_run_that_exhausts_its_budget_exits_1_and_says_why(
    golem_env: dict[str, str],
    repo: Path,
) -> None:
    done = golem(
        golem_env, "agent", "--max-turns", "2", "--model", FIX, "--workspace", str(repo), "Fix"
    )
    assert done.returncode == 1
    assert b"budget_spent after 2 turns" in done.stderr
    assert b"turn budget of 2" in done.stderr


def test_trajectory_show_renders_a_recorded_run(
    golem_env: dict[str, str],
    repo: Path,
    tmp_path: Path,
) -> None:
    recorded = tmp_path / "run.jsonl"
    args = ["--trajectory", str(recorded), "--model", FIX, "--workspace", str(repo)]
    assert golem(golem_env, "agent", *args, "Fix the tests").returncode == 0
    shown = golem(golem_env, "trajectory", "show", str(recorded)).stdout.decode()
    assert "Fix the tests" in shown
    assert "turn 5" in shown
    assert "→ edit calculator.py" in shown
    assert "AssertionError: -1 != 5" in shown
    assert "done" in shown
    assert "it now adds them" in shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent", "--workspace", "/no/such/dir", "x"], b"is not a directory"),
        (["agent", "--model", "nosuch/model", "--workspace", ".", "x"], b"model"),
        (["agent", "--tools", "teleport", "--workspace", ".", "x"], b"teleport"),
        (["trajectory", "show", "/no/such.jsonl"], b"cannot read trajectory"),
    ],
)
def test_bad_agent_input_is_one_line_exit_2(
    golem_env: dict[str, str],
    args: list[str],
    message: bytes,
) -> None:
    done = golem(golem_env, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert b"Traceback" not in done.stderr


def test_a_temporary_directory_inside_the_workspace_is_refused_before_any_box(
    golem_env: dict[str, str],
    repo: Path,
) -> None:
    (repo / "tmp").mkdir()
    done = golem({**golem_env, "TMPDIR": str(repo / "tmp")}, "agent", "--model", FIX,
                 "--workspace", str(repo), "Fix the tests")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert b"set TMPDIR elsewhere" in done.stderr
    assert b"Traceback" not in done.stderr
    assert list((repo / "tmp").iterdir()) == []
