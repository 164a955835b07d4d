"""The context layer's contracts: what golem learns about a task and a repository before
the agent starts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ContextSection", "HydratedContext", "SectionKind"]

SectionKind = Literal["rules", "issue", "files", "repo_map"]


class ContextSection(BaseModel):
    """One piece of context: a rule file, the issue, a file it names, the repo map."""

    model_config = ConfigDict(extra="forbid")

    kind: SectionKind
    title: str = Field(description="e.g. the rule file's path, or the issue's title.")
    text: str
    tokens: int = Field(description="Estimated tokens of ``text``.")
    truncated: bool = False


class HydratedContext(BaseModel):
    """Everything gathered for the agent, fitted in a token budget, in order."""

    model_config = ConfigDict(extra="forbid")

    sections: list[ContextSection] = Field(default_factory=list)
    budget_tokens: int
    dropped: list[str] = Field(
        default_factory=list, description="What did not fit in the budget, by title."
    )

    @property
    def tokens(self) -> int:
        """Estimated tokens of all sections."""
        return sum(section.tokens for section in self.sections)

    def render(self) -> str:
        """The context as the agent's system prompt carries it (markdown)."""
        headings = {
            "rules": "Rules of this repository",
            "issue": "The issue",
            "files": "Files the issue names",
            "repo_map": "Repository map",
        }
        parts: list[str] = []
        for section in self.sections:
            note = " (truncated)" if section.truncated else ""
            parts.append(f"## {headings[section.kind]}: {section.title}{note}\n\n{section.text}")
        return "\n\n".join(parts)
