"""Hydration: rules, the issue, named files and the map, in priority order, in budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.context import HydratedContext, estimate_tokens, hydrate
from golem.core import ConfigError
from golem.forge import Issue, IssueComment
from tests.context.conftest import MakeRepo


def _project() -> dict[str, str]:
    files = {
        "AGENTS.md": "Run the tests before you finish.\n",
        "services/api/CLAUDE.md": "The API answers in JSON.\n",
        "services/api/handlers.py": "".join(
            f"def handler_{n}() -> int:\n    return {n}\n\n" for n in range(60)
        ),
        ".gitignore": "*.log\n",
    }
    for package in range(10):
        for module in range(10):
            files[f"lib/pkg{package}/mod{module}.py"] = "".join(
                f"def routine_{n}(value: int, label: str = 'x') -> int:\n    return value\n\n"
                for n in range(10)
            )
    return files


ISSUE = Issue(
    title="handler_3 returns the wrong code",
    body='Traceback:\n  File "/srv/app/services/api/handlers.py", line 11, in handler_3\n',
    comments=[IssueComment(author="dana", body="Also see `mod7.py`? No: lib/pkg1/mod7.py.")],
    labels=["bug"],
    number=12,
)


def _within_budget(context: HydratedContext) -> None:
    assert context.tokens <= context.budget_tokens
    assert estimate_tokens(context.render()) <= context.budget_tokens
    for section in context.sections:
        assert section.tokens == estimate_tokens(section.text)


def test_sections_come_as_rules_issue_files_then_map(make_repo: MakeRepo) -> None:
    repo = make_repo(_project())

    context = hydrate(repo, "services/api", task="Fix it.", issue=ISSUE, budget_tokens=50_000)

    assert [(section.kind, section.title) for section in context.sections] == [
        ("rules", "AGENTS.md"),
        ("rules", "services/api/CLAUDE.md"),
        ("issue", "handler_3 returns the wrong code"),
        ("files", "services/api/handlers.py (line 11)"),
        ("files", "lib/pkg1/mod7.py"),
        ("repo_map", "tree and definitions"),
    ]
    assert context.dropped == []
    assert "### Comment 1, by dana" in context.sections[2].text
    assert "    10\tdef handler_3() -> int:\n    11\t    return 3\n" in context.sections[3].text
    rendered = context.render()
    assert rendered.startswith("## Rules of this repository: AGENTS.md\n\nRun the tests")
    assert "## Repository map: tree and definitions\n\n```text\n104 files." in rendered
    _within_budget(context)


def test_a_large_map_is_cut_to_fit_and_dropped_says_what_was_left_out(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(_project())

    context = hydrate(repo, "services/api", task="Fix it.", issue=ISSUE, budget_tokens=3_000)

    _within_budget(context)
    assert [section.kind for section in context.sections][-1] == "repo_map"
    assert context.dropped == ["repo map: definitions in 94 files"]
    repo_map = context.sections[-1].text
    assert "    mod7.py\n      def routine_0(value: int, label: str='x') -> int\n" in repo_map
    assert "      def handler_59() -> int\n" in repo_map

    smaller = hydrate(repo, "services/api", task="Fix it.", issue=ISSUE, budget_tokens=1_500)

    _within_budget(smaller)
    assert smaller.dropped == [
        "repo map: definitions in 99 files",
        "repo map: contents of 9 directories (lib/pkg0/, lib/pkg2/, lib/pkg3/, lib/pkg4/, "
        "lib/pkg5/, ...)",
        "repo map: definitions in 1 named file",
    ]
    repo_map = smaller.sections[-1].text
    assert "  pkg0/ (10 files)\n  pkg1/\n    mod0.py\n" in repo_map
    assert "      def handler_59() -> int\n" in repo_map


def test_a_small_budget_cuts_named_files_to_their_share_and_drops_the_map(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(_project())

    context = hydrate(repo, "services/api", task="Fix it.", issue=ISSUE, budget_tokens=400)

    _within_budget(context)
    kinds = [section.kind for section in context.sections]
    assert kinds[:3] == ["rules", "rules", "issue"]
    assert "repo_map" not in kinds
    assert "repo map: tree and definitions" in context.dropped
    assert context.dropped == [
        "file: services/api/handlers.py (line 11): the last 26 of 34 lines",
        "file: lib/pkg1/mod7.py: the last 26 of 32 lines",
        "repo map: tree and definitions",
    ]
    assert all(section.tokens <= 100 for section in context.sections if section.kind == "files")


def test_a_named_file_cut_to_its_share_keeps_its_fence_closed(make_repo: MakeRepo) -> None:
    repo = make_repo({"big.py": "".join(f"value_{n} = {n}\n" for n in range(3_000))})

    context = hydrate(repo, task="Look at big.py", budget_tokens=2_000)

    _within_budget(context)
    [named] = [section for section in context.sections if section.kind == "files"]
    assert named.truncated
    assert named.tokens <= 2_000 // 4
    assert named.text.startswith("```python\n     1\tvalue_0 = 0\n")
    assert named.text.endswith(" lines]\n```")
    cut = next(item for item in context.dropped if item.startswith("file: big.py: the last "))
    assert cut.endswith(" lines")
    assert "(truncated)" in context.render()


def test_rule_files_together_take_at_most_half_the_budget(make_repo: MakeRepo) -> None:
    rules = "".join(f"- rule number {n} that must be followed\n" for n in range(400))
    repo = make_repo({"AGENTS.md": rules, "sub/AGENTS.md": rules, "sub/x.py": "x = 1\n"})

    context = hydrate(repo, "sub", task="Change x.py", budget_tokens=2_000)

    _within_budget(context)
    rule_tokens = sum(s.tokens for s in context.sections if s.kind == "rules")
    assert rule_tokens <= 1_000
    assert context.dropped[0].startswith("rule file: AGENTS.md: the last ")
    assert "rule file: sub/AGENTS.md" in context.dropped
    assert [s.kind for s in context.sections] == ["rules", "files", "repo_map"]


def test_a_task_without_an_issue_still_names_files(make_repo: MakeRepo) -> None:
    repo = make_repo({"src/util.py": "def clamp(x: int) -> int:\n    return x\n"})

    context = hydrate(repo, task="clamp in src/util.py:2 ignores its bounds")

    assert [(s.kind, s.title) for s in context.sections] == [
        ("files", "src/util.py (line 2)"),
        ("repo_map", "tree and definitions"),
    ]


def test_hydration_is_deterministic(make_repo: MakeRepo) -> None:
    repo = make_repo(_project())

    runs = [
        hydrate(repo, "services/api", task="Fix it.", issue=ISSUE, budget_tokens=2_500)
        for _ in range(2)
    ]

    assert runs[0] == runs[1]
    assert runs[0].render() == runs[1].render()


def test_a_missing_repository_or_an_outside_workdir_is_a_config_error(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    repo = make_repo({"a.py": "x = 1\n"})

    with pytest.raises(ConfigError, match="not a directory"):
        hydrate(tmp_path / "nowhere", task="x")
    with pytest.raises(ConfigError, match="outside the repository"):
        hydrate(repo, tmp_path, task="x")
