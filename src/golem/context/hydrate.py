"""Hydration: the rule files, the issue, the files it names and a repo map, fitted into a
token budget, in priority order.

Sections are added in that order, which is also their priority: each gets what it needs of
the budget that is left, is cut on a line boundary when that is not enough, and is dropped
(and listed in ``dropped``) when less than ``MIN_SECTION_TOKENS`` would remain of it. Two
shares keep one kind from starving the rest: all rule files together get at most half the
budget, each named file at most a quarter. The repo map is built for whatever remains, so
it loses detail (``build_repo_map``) rather than being cut. Each section's heading, as
``HydratedContext.render`` writes it, is counted too: the rendered context is estimated
within the budget.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from golem.context.contracts import ContextSection, HydratedContext, SectionKind
from golem.context.files import relative_workdir
from golem.context.issue import files_named, render_issue
from golem.context.repo_map import build_repo_map
from golem.context.rules import find_rule_files
from golem.context.tokens import estimate_tokens, truncate_to_tokens
from golem.core import ConfigError
from golem.forge import Issue

__all__ = ["DEFAULT_BUDGET_TOKENS", "MIN_SECTION_TOKENS", "hydrate"]

DEFAULT_BUDGET_TOKENS = 16_000
"""The context's budget when the caller names none (estimated tokens)."""

MIN_SECTION_TOKENS = 48
"""A section that would keep fewer tokens than this is dropped instead of cut."""

MAP_TITLE = "tree and definitions"
LABELS: dict[SectionKind, str] = {
    "rules": "rule file",
    "issue": "issue",
    "files": "file",
    "repo_map": "repo map",
}


def hydrate(
    repo: str | os.PathLike[str],
    workdir: str | os.PathLike[str] = "",
    *,
    task: str,
    issue: Issue | None = None,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
) -> HydratedContext:
    """The context for an agent working on ``task`` (and ``issue``) in ``workdir`` of the
    checked-out ``repo``, within ``budget_tokens`` estimated tokens.

    ``workdir`` is relative to ``repo`` or absolute inside it. Files named by the task or
    the issue are given (and kept whole in the repo map); the same inputs give the same
    context. A ``ConfigError`` when ``repo`` is not a directory or ``workdir`` lies outside.
    """
    root = Path(repo)
    if not root.is_dir():
        raise ConfigError(f"{repo} is not a directory; give the path of a checked-out repository")
    rel = relative_workdir(root, workdir)
    issue_text = render_issue(issue) if issue is not None else ""
    mentions = "\n\n".join(text for text in (task, issue_text) if text)
    named = files_named(mentions, root, workdir=rel)
    fit = _Fit(budget_tokens)
    rules_left = budget_tokens // 2
    for rule in find_rule_files(root, rel, named_paths=[item.path for item in named]):
        rules_left -= fit.add("rules", rule.path, rule.text, cap=rules_left, cut=rule.truncated)
    if issue is not None:
        fit.add("issue", issue.title.strip() or "(untitled)", issue_text)
    for item in named:
        fit.add("files", item.title, item.text, cap=budget_tokens // 4, cut=item.truncated)
    room = fit.room("repo_map", MAP_TITLE)
    if room < MIN_SECTION_TOKENS:
        fit.dropped.append(f"{LABELS['repo_map']}: {MAP_TITLE}")
    else:
        keep = [item.path for item in named]
        repo_map = build_repo_map(
            root, budget_tokens=room, keep=keep, workdir=rel, mentions=mentions
        )
        fit.add("repo_map", MAP_TITLE, repo_map.text)
        fit.dropped.extend(repo_map.left_out)
    return HydratedContext(sections=fit.sections, budget_tokens=budget_tokens, dropped=fit.dropped)


@dataclass
class _Fit:
    """Sections added while the budget lasts."""

    left: int
    sections: list[ContextSection] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def room(self, kind: SectionKind, title: str, cap: int | None = None) -> int:
        """Tokens left for the text of a section, its heading paid."""
        left = self.left if cap is None else min(self.left, cap)
        return left - _heading_tokens(kind, title)

    def add(
        self,
        kind: SectionKind,
        title: str,
        text: str,
        *,
        cap: int | None = None,
        cut: bool = False,
    ) -> int:
        """Add a section, cut or dropped as the budget requires; the tokens it took."""
        room = self.room(kind, title, cap)
        label = f"{LABELS[kind]}: {title}"
        tokens = estimate_tokens(text)
        if tokens > room:
            total = text.count("\n") + 1
            text, kept = _cut(text, room) if room >= MIN_SECTION_TOKENS else ("", 0)
            tokens = estimate_tokens(text)
            if not text or tokens < MIN_SECTION_TOKENS:
                self.dropped.append(label)
                return 0
            cut = True
            self.dropped.append(f"{label}: the last {total - kept} of {total} lines")
        self.sections.append(
            ContextSection(kind=kind, title=title, text=text, tokens=tokens, truncated=cut)
        )
        taken = tokens + _heading_tokens(kind, title)
        self.left -= taken
        return taken


def _heading_tokens(kind: SectionKind, title: str) -> int:
    """Tokens ``HydratedContext.render`` adds around a section's text (the heading, the
    "(truncated)" note, the blank lines), counted as if the section were cut."""
    probe = HydratedContext(
        sections=[ContextSection(kind=kind, title=title, text="", tokens=0, truncated=True)],
        budget_tokens=0,
    )
    return estimate_tokens(probe.render() + "\n\n")


def _cut(text: str, tokens: int) -> tuple[str, int]:
    """``truncate_to_tokens``, keeping a fenced block's fences around what is kept."""
    lines = text.split("\n")
    fence = lines[0].rstrip("abcdefghijklmnopqrstuvwxyz") if len(lines) > 2 else ""
    if len(fence) < 3 or set(fence) != {"`"} or lines[-1] != fence:
        return truncate_to_tokens(text, tokens)
    frame = estimate_tokens(f"{lines[0]}\n\n{fence}")
    inner, kept = truncate_to_tokens("\n".join(lines[1:-1]), tokens - frame)
    if not inner:
        return "", 0
    return f"{lines[0]}\n{inner}\n{fence}", kept + 2
