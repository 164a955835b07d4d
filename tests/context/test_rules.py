"""Rule files from the repository's root down to the working directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from golem.context import find_rule_files
from golem.context.rules import RULE_MAX_BYTES
from golem.core import ConfigError
from tests.context.conftest import MakeRepo


def test_rule_files_come_from_the_root_down_to_the_workdir_outermost_first(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            "AGENTS.md": "root agents",
            "CLAUDE.md": "root claude",
            ".cursorrules": "root cursor",
            ".github/copilot-instructions.md": "root copilot",
            "packages/AGENTS.md": "packages agents",
            "packages/api/AGENT.md": "api agent",
            "packages/api/src/main.py": "x = 1\n",
            "packages/web/AGENTS.md": "a sibling, not on the way",
            "docs/CLAUDE.md": "not on the way either",
        }
    )

    rules = find_rule_files(repo, "packages/api")

    assert [rule.path for rule in rules] == [
        "AGENTS.md",
        "CLAUDE.md",
        ".cursorrules",
        ".github/copilot-instructions.md",
        "packages/AGENTS.md",
        "packages/api/AGENT.md",
    ]
    assert [rule.text for rule in rules][-1] == "api agent"
    assert find_rule_files(repo, repo / "packages" / "api") == rules
    assert [rule.path for rule in find_rule_files(repo)] == [rule.path for rule in rules[:4]]


def test_a_symlink_out_of_the_repository_is_ignored(make_repo: MakeRepo, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("the host's secret")
    outside_rules = tmp_path / "outside-rules"
    outside_rules.mkdir()
    (outside_rules / "leak.mdc").write_text("outside rule")
    repo = make_repo({"CLAUDE.md": "kept"})
    (repo / "AGENTS.md").symlink_to(secret)
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").symlink_to("../../secret.md")
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "rules").symlink_to(outside_rules)

    rules = find_rule_files(repo, "sub")

    assert [(rule.path, rule.text) for rule in rules] == [("CLAUDE.md", "kept")]


def test_a_rule_file_linked_to_another_inside_the_repository_is_read_once(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"AGENTS.md": "the rules"})
    (repo / "CLAUDE.md").symlink_to("AGENTS.md")

    assert [rule.path for rule in find_rule_files(repo)] == ["AGENTS.md"]


def test_a_fifo_named_like_a_rule_file_is_skipped_without_blocking(make_repo: MakeRepo) -> None:
    repo = make_repo({"CLAUDE.md": "kept"})
    os.mkfifo(repo / "AGENTS.md")

    assert [rule.path for rule in find_rule_files(repo)] == ["CLAUDE.md"]


def test_a_huge_rule_file_is_capped_and_says_so(make_repo: MakeRepo) -> None:
    line = "- a rule that goes on and on\n"
    repo = make_repo({"AGENTS.md": line * (2 * RULE_MAX_BYTES // len(line))})

    [rule] = find_rule_files(repo)

    assert rule.truncated
    assert len(rule.text.encode()) < RULE_MAX_BYTES + 300
    assert "the first 32768 are shown" in rule.text


def test_empty_rule_files_are_left_out(make_repo: MakeRepo) -> None:
    repo = make_repo({"AGENTS.md": "\n\n", "CLAUDE.md": "kept"})

    assert [rule.path for rule in find_rule_files(repo)] == ["CLAUDE.md"]


def test_cursor_rules_apply_always_by_glob_or_as_a_pointer(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            ".cursor/rules/always.mdc": "---\nalwaysApply: true\n---\nalways rule",
            ".cursor/rules/py.mdc": "---\nglobs: src/**/*.py\nalwaysApply: false\n---\npy rule",
            ".cursor/rules/ts.mdc": "---\nglobs: *.ts, *.tsx\n---\nts rule",
            ".cursor/rules/listed.mdc": '---\nglobs:\n  - "docs/*.md"\n---\ndocs rule',
            ".cursor/rules/asked.mdc": "---\ndescription: How to, write migrations\n---\nmig",
            ".cursor/rules/plain.md": "plain rule",
        }
    )

    rules = {rule.path: rule for rule in find_rule_files(repo, named_paths=["src/app/x.py"])}

    assert list(rules) == [
        ".cursor/rules/always.mdc",
        ".cursor/rules/asked.mdc",
        ".cursor/rules/listed.mdc",
        ".cursor/rules/plain.md",
        ".cursor/rules/py.mdc",
        ".cursor/rules/ts.mdc",
    ]
    assert rules[".cursor/rules/always.mdc"].text == "always rule"
    assert rules[".cursor/rules/py.mdc"].text == "py rule"
    assert rules[".cursor/rules/plain.md"].text == "plain rule"
    assert rules[".cursor/rules/ts.mdc"].text == (
        "Applies to files matching `*.ts`, `*.tsx`: read .cursor/rules/ts.mdc before you "
        "change one."
    )
    assert not rules[".cursor/rules/ts.mdc"].applied
    assert "`docs/*.md`" in rules[".cursor/rules/listed.mdc"].text
    assert rules[".cursor/rules/asked.mdc"].text == (
        "How to, write migrations. Read .cursor/rules/asked.mdc when the task calls for it."
    )


def test_nested_cursor_rules_match_globs_relative_to_their_directory(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"web/.cursor/rules/ts.mdc": "---\nglobs: src/*.ts\n---\nweb ts rule"})

    [applied] = find_rule_files(repo, "web", named_paths=["web/src/app.ts"])
    [pointer] = find_rule_files(repo, "web", named_paths=["src/app.ts"])

    assert applied.text == "web ts rule"
    assert not pointer.applied


def test_a_workdir_outside_the_repository_is_a_config_error(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    repo = make_repo({"AGENTS.md": "x"})

    with pytest.raises(ConfigError, match="outside the repository"):
        find_rule_files(repo, "../elsewhere")
    with pytest.raises(ConfigError, match="outside the repository"):
        find_rule_files(repo, tmp_path)


def test_rule_files_are_read_from_the_work_tree_whether_committed_or_not(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"README.md": "x"})
    (repo / "AGENTS.md").write_text("not committed yet")

    assert [rule.text for rule in find_rule_files(repo)] == ["not committed yet"]
