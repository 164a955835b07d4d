"""`golem eval make --from-merged-prs`: the pull requests merged last become tasks, each
from its merge commit's first parent, saying what its linked issue says (else its own title
and body): on GitHub through golem's client (a loopback GitHub API, the repository's real
history with real merge commits, real boxes), and on the local forge (merge commits of the
default branch, the local forge's records of the pull requests they merged)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from golem.core import load_config
from golem.eval import Sources, from_merged_pull_requests, read_tasks
from golem.forge import LocalForge, PullRequestDraft
from golem.store import SqlStore
from golem.testing.github_server import GitHubServer
from tests.acceptance.ecosystems import REPOS, git

LAYERS = REPOS / "fixes" / "commits"


def merged_history(parent: Path, branches: list[tuple[str, int, str]]) -> Path:
    """A bare repository: the first commit of ``fixes``, then each (branch, layer,
    message) merged into main with a merge commit (``--no-ff``)."""
    work = parent / "work"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    shutil.copytree(LAYERS / "1", work, dirs_exist_ok=True)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "textstats", cwd=work)
    for branch, layer, message in branches:
        git("checkout", "-q", "-b", branch, cwd=work)
        shutil.copytree(LAYERS / str(layer), work, dirs_exist_ok=True)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"work on {branch}", cwd=work)
        git("checkout", "-q", "main", cwd=work)
        git("merge", "-q", "--no-ff", "-m", message, branch, cwd=work)
    remote = parent / "fixes.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    return remote


def merges(remote: Path) -> list[str]:
    return git("log", "--first-parent", "--merges", "--reverse", "--format=%H", "main",
               cwd=remote).split()  # fmt: skip


@pytest.mark.bwrap
def test_github_pull_requests_merged_last_become_tasks_saying_what_their_issue_says(
    reachable_dir: Path,
) -> None:
    remote = merged_history(reachable_dir, [
        ("fix-words", 2, "Merge pull request #5 from octo/fix-words"),
        ("fix-lines", 4, "Merge pull request #6 from octo/fix-lines"),
    ])  # fmt: skip
    first, second = merges(remote)
    with GitHubServer() as github:
        github.add_issue("octo/fixes", 3, "count_words('') says 1", "It should say 0.")
        github.add_closed_pull("octo/fixes", 5, "Fix empty texts", "Fixes #3",
                               merge_commit=first, closed_at="2024-05-01T10:00:00Z")  # fmt: skip
        github.add_closed_pull("octo/fixes", 6, "Count a last line without newline",
                               "Lines without a final newline were not counted.",
                               merge_commit=second, closed_at="2024-05-02T10:00:00Z")  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
        env |= {"GOLEM_STATE_DIR": str(reachable_dir / "state"),
                "XDG_CONFIG_HOME": str(reachable_dir / "cfg"),
                "GOLEM_FORGE__GITHUB__API_URL": github.api_url}  # fmt: skip
        out = reachable_dir / "tasks.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "golem", "eval", "make", "--repo", "octo/fixes",
             "--forge", "github", "--from-merged-prs", "2", "--clone", str(remote),
             "--out", str(out)],
            env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    words, lines = read_tasks(out)
    assert (words.instance_id, words.repo) == ("octo__fixes-5", "octo/fixes")
    assert words.problem_statement == "count_words('') says 1\n\nIt should say 0."
    assert words.FAIL_TO_PASS == ["test_words.CountWords.test_empty"]
    assert words.base_commit == git("rev-parse", f"{first}^1", cwd=remote).strip()
    assert words.golem_source == "github pull request octo/fixes#5"
    assert words.created_at == "2024-05-01T10:00:00Z"
    assert lines.problem_statement == (
        "Count a last line without newline\n\nLines without a final newline were not counted."
    )
    assert lines.FAIL_TO_PASS == ["test_lines.CountLines.test_last_line_without_newline"]
    assert lines.base_commit == first


async def test_the_local_forges_merged_pull_requests_are_the_merge_commits_of_main(
    tmp_path: Path,
) -> None:
    remote = merged_history(tmp_path, [
        ("golem/fix-empty-texts-a1b2c3", 2, "Merge branch 'golem/fix-empty-texts-a1b2c3'"),
        ("by-hand", 4, "Merge branch 'by-hand'\n\nLines without a newline count."),
    ])  # fmt: skip
    first, second = merges(remote)
    config = load_config({"state_dir": str(tmp_path / "state")}, files=[])
    store = await SqlStore.open(config)
    try:
        await LocalForge(store).open_pull_request(PullRequestDraft(
            repo=str(remote), base="main", head="golem/fix-empty-texts-a1b2c3",
            title="count_words('') is 0", body="An empty text has no word.",
        ))  # fmt: skip
        source = await Sources(config).get(str(remote))
        found = await from_merged_pull_requests(config, store, "local", str(remote), source, 5)
    finally:
        await store.close()
    assert [(c.change, c.statement) for c in found] == [
        (first, "count_words('') is 0\n\nAn empty text has no word."),
        (second, "Merge branch 'by-hand'\n\nLines without a newline count."),
    ]
    assert found[0].instance_id == "fixes-1"
    assert found[1].instance_id == f"fixes-{second[:12]}"
    assert found[1].base == first
