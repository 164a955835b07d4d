"""golem.context: rule files, the issue, relevant files and a repo map, gathered before the
agent starts; and reading a checked-out repository safely (``files``) for whoever reads it."""

from golem.context.contracts import ContextSection, HydratedContext, SectionKind
from golem.context.files import SKIPPED_DIRS, file_in_repo, read_bytes, read_text
from golem.context.hydrate import DEFAULT_BUDGET_TOKENS, hydrate
from golem.context.issue import NamedFile, files_named, render_issue
from golem.context.repo_map import RepoMap, build_repo_map
from golem.context.rules import RuleFile, find_rule_files
from golem.context.tokens import estimate_tokens

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "SKIPPED_DIRS",
    "ContextSection",
    "HydratedContext",
    "NamedFile",
    "RepoMap",
    "RuleFile",
    "SectionKind",
    "build_repo_map",
    "estimate_tokens",
    "file_in_repo",
    "files_named",
    "find_rule_files",
    "hydrate",
    "read_bytes",
    "read_text",
    "render_issue",
]
