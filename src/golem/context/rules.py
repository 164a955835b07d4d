"""Rule files: what a repository tells coding agents, from its root down to the working
directory.

In each directory from the root down to the working directory (outermost first), these are
read, in this order: ``AGENTS.md``, ``AGENT.md``, ``CLAUDE.md``, ``.cursorrules``, the
files of ``.cursor/rules/`` (``.mdc`` and ``.md``, sorted), ``.github/copilot-instructions.md``.
Symlinks that leave the repository, non-regular files and files already read (``CLAUDE.md``
linked to ``AGENTS.md``) are skipped; each file is capped at ``RULE_MAX_BYTES``.

Cursor's ``.mdc`` rules carry front matter: ``alwaysApply: true`` (or no front matter) puts
the rule in whole; ``globs`` puts it in whole when a file the task names matches, and
otherwise as a one-line pointer saying when to read it; a rule with only a ``description``
(or nothing) becomes such a pointer too, since nobody can mention it to an unattended agent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from golem.context.files import file_in_repo, read_text, relative_workdir

__all__ = ["RULE_MAX_BYTES", "RuleFile", "find_rule_files"]

RULE_MAX_BYTES = 32 * 1024
"""A rule file beyond this many bytes is cut (and says so)."""

MAX_CURSOR_RULES = 64
"""At most this many files are read from one ``.cursor/rules`` directory."""

BEFORE_CURSOR = ("AGENTS.md", "AGENT.md", "CLAUDE.md", ".cursorrules")
AFTER_CURSOR = (".github/copilot-instructions.md",)


@dataclass(frozen=True)
class RuleFile:
    """One rule file as the agent gets it."""

    path: str
    """POSIX path relative to the repository's root."""
    text: str
    """The rule's text, or for a conditional Cursor rule not applied, when to read it."""
    truncated: bool = False
    """Whether the file was cut at ``RULE_MAX_BYTES``."""
    applied: bool = True
    """False for a conditional rule given only as a pointer."""


def find_rule_files(
    repo: str | os.PathLike[str],
    workdir: str | os.PathLike[str] = "",
    *,
    named_paths: Sequence[str] = (),
) -> list[RuleFile]:
    """The rule files of ``repo`` from its root down to ``workdir``, outermost first.

    ``named_paths`` (repository-relative) are the files the task names: a Cursor rule whose
    ``globs`` match one of them is applied in whole.
    """
    root = Path(repo)
    rel_workdir = relative_workdir(root, workdir)
    seen: set[Path] = set()
    rules: list[RuleFile] = []
    for directory in _directories(rel_workdir):
        for rel in _candidates(root, directory):
            real = file_in_repo(root, rel)
            if real is None or real in seen:
                continue
            seen.add(real)
            rule = _read_rule(real, rel, directory, named_paths)
            if rule is not None:
                rules.append(rule)
    return rules


def _directories(rel_workdir: str) -> list[str]:
    parts = PurePosixPath(rel_workdir).parts if rel_workdir else ()
    return ["", *("/".join(parts[: i + 1]) for i in range(len(parts)))]


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _candidates(repo: Path, directory: str) -> Iterable[str]:
    for name in BEFORE_CURSOR:
        yield _join(directory, name)
    yield from _cursor_rules(repo, _join(directory, ".cursor/rules"))
    for name in AFTER_CURSOR:
        yield _join(directory, name)


def _cursor_rules(repo: Path, rules_dir: str) -> list[str]:
    root = repo.resolve()
    real = (root / rules_dir).resolve()
    if not real.is_relative_to(root) or not real.is_dir():
        return []
    found: list[str] = []
    for top, dirs, files in os.walk(real):
        dirs.sort()
        base = Path(top).relative_to(real)
        found.extend(
            _join(rules_dir, (base / name).as_posix())
            for name in files
            if name.endswith((".mdc", ".md"))
        )
    return sorted(found)[:MAX_CURSOR_RULES]


def _read_rule(real: Path, rel: str, directory: str, named_paths: Sequence[str]) -> RuleFile | None:
    read = read_text(real, RULE_MAX_BYTES)
    if read is None or not read.text.strip():
        return None
    text = read.text.rstrip()
    if read.truncated:
        text += (
            f"\n[... {rel} is {read.size} bytes; the first {RULE_MAX_BYTES} are shown. "
            "Read the rest of it before you change anything it may govern.]"
        )
    if "/.cursor/rules/" not in f"/{rel}" or not text.startswith("---"):
        return RuleFile(path=rel, text=text, truncated=read.truncated)
    fields, body = _front_matter(text)
    if _applies(fields, directory, named_paths):
        return RuleFile(path=rel, text=body.strip(), truncated=read.truncated)
    return RuleFile(path=rel, text=_pointer(rel, fields), applied=False)


def _applies(fields: dict[str, list[str]], directory: str, named_paths: Sequence[str]) -> bool:
    if not fields:
        return True
    if [value.lower() for value in fields.get("alwaysApply", [])] == ["true"]:
        return True
    globs = _globs(fields)
    prefix = f"{directory}/" if directory else ""
    for path in named_paths:
        if path.startswith(prefix) and any(
            _glob_matches(glob, path.removeprefix(prefix)) for glob in globs
        ):
            return True
    return False


def _pointer(rel: str, fields: dict[str, list[str]]) -> str:
    description = " ".join(fields.get("description", [])).strip().strip("'\"")
    globs = _globs(fields)
    lead = f"{description.rstrip('.')}. " if description else ""
    if globs:
        patterns = ", ".join(f"`{glob}`" for glob in globs)
        return f"{lead}Applies to files matching {patterns}: read {rel} before you change one."
    return f"{lead}Read {rel} when the task calls for it."


def _front_matter(text: str) -> tuple[dict[str, list[str]], str]:
    """Cursor's front matter as key -> values, and the body after it. Parsed by hand:
    ``globs: *.ts`` is common and is not valid YAML."""
    lines = text.splitlines()
    try:
        end = lines.index("---", 1)
    except ValueError:
        return {}, text
    fields: dict[str, list[str]] = {}
    key = ""
    for line in lines[1:end]:
        stripped = line.strip()
        if stripped.startswith("- ") and key:
            fields[key].append(stripped[2:].strip())
        elif ":" in line and not line[0].isspace():
            key, _, value = line.partition(":")
            key = key.strip()
            fields[key] = [value.strip()] if value.strip() else []
    return fields, "\n".join(lines[end + 1 :])


def _globs(fields: dict[str, list[str]]) -> list[str]:
    globs: list[str] = []
    for raw in fields.get("globs", []):
        items = raw.strip().removeprefix("[").removesuffix("]").split(",")
        globs.extend(item.strip().strip("'\"").strip() for item in items)
    return [glob for glob in globs if glob]


def _glob_matches(glob: str, path: str) -> bool:
    glob = glob.removeprefix("./")
    if "/" not in glob:
        return fnmatchcase(PurePosixPath(path).name, glob)
    return fnmatchcase(path, glob) or fnmatchcase(path, glob.replace("**/", ""))
