"""golem.context: rule files, the issue, relevant files and a repo map, gathered before the
agent starts; and the repository's own install, setup, lint, build and test commands."""

from golem.context.contracts import (
    CHECK_STEPS,
    STEPS,
    ContextSection,
    DetectedCommand,
    HydratedContext,
    RepoConventions,
    SectionKind,
    Step,
)
from golem.context.conventions import (
    CONVENTIONS_FILE,
    ConventionsFile,
    load_conventions,
    render_conventions,
)
from golem.context.detect import checks_served, detect_conventions
from golem.context.detect.ecosystem import known_registries
from golem.context.hydrate import DEFAULT_BUDGET_TOKENS, hydrate
from golem.context.issue import NamedFile, files_named, render_issue
from golem.context.repo_map import RepoMap, build_repo_map
from golem.context.rules import RuleFile, find_rule_files
from golem.context.tokens import estimate_tokens

__all__ = [
    "CHECK_STEPS",
    "CONVENTIONS_FILE",
    "DEFAULT_BUDGET_TOKENS",
    "STEPS",
    "ContextSection",
    "ConventionsFile",
    "DetectedCommand",
    "HydratedContext",
    "NamedFile",
    "RepoConventions",
    "RepoMap",
    "RuleFile",
    "SectionKind",
    "Step",
    "build_repo_map",
    "checks_served",
    "detect_conventions",
    "estimate_tokens",
    "files_named",
    "find_rule_files",
    "hydrate",
    "known_registries",
    "load_conventions",
    "render_conventions",
    "render_issue",
]
