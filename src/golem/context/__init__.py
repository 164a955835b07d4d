"""golem.context: rule files, the issue, relevant files and a repo map, gathered before the
agent starts; and the repository's own setup, lint, build and test commands."""

from golem.context.contracts import ContextSection, HydratedContext, RepoConventions, SectionKind

__all__ = ["ContextSection", "HydratedContext", "RepoConventions", "SectionKind"]
