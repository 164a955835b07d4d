"""Top-level definitions of a source file, for the repo map.

Python is read with ``ast``: public classes (with their bases and public methods) and
functions, with their signatures. JavaScript/TypeScript, Go, Rust and Java get a cheap line-based
outline: declarations that start a line at the top level, and for classes, impls and
traits their members one indent in. Nothing is executed or imported.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

__all__ = ["OUTLINED_SUFFIXES", "Definition", "outline"]

MAX_LINE = 120
MAX_DEFINITIONS = 60
MAX_MEMBERS = 30


@dataclass(frozen=True)
class Definition:
    """One top-level definition: its signature line, and its members' (methods)."""

    signature: str
    members: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class _Grammar:
    top: re.Pattern[str]
    container: re.Pattern[str]
    member: re.Pattern[str]


_MEMBER_NOT = r"(?!(?:if|for|while|switch|catch|return|throw|new|else|do|try|await)\b)"
_JS = _Grammar(
    top=re.compile(
        r"^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?"
        r"(?:function\b|class\b|interface\b|type\s+\w|enum\b|const\s+enum\b|namespace\b)"
        r"|^export\s+(?:const|let|var)\s"
    ),
    container=re.compile(r"^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?class\b"),
    member=re.compile(
        r"(?:(?:public|protected|static|async|readonly|get|set|abstract)\s+)*"
        + _MEMBER_NOT
        + r"#?[A-Za-z_$][\w$]*\s*(?:<[^>]*>)?\s*\("
    ),
)
_GO = _Grammar(
    top=re.compile(r"^(?:func|type)\s"),
    container=re.compile(r"(?!)"),
    member=re.compile(r"(?!)"),
)
_RUST = _Grammar(
    top=re.compile(
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|extern\s+\"[^\"]*\")\s+)*"
        r"(?:fn|struct|enum|trait|impl|mod|type|union|macro_rules!)\b"
    ),
    container=re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?:impl|trait)\b"),
    member=re.compile(r"(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe)\s+)*fn\b"),
)
_JAVA = _Grammar(
    top=re.compile(
        r"^(?:(?:public|protected|private|abstract|final|static|sealed|non-sealed)\s+)*"
        r"(?:class|interface|enum|record|@interface)\s+\w"
    ),
    container=re.compile(
        r"^(?:(?:public|protected|private|abstract|final|static|sealed|non-sealed)\s+)*"
        r"(?:class|interface|enum|record)\s+\w"
    ),
    member=re.compile(
        r"(?:@\w+\s+)*(?:public|protected)\s+"
        r"(?:(?:static|final|abstract|synchronized|default|native)\s+)*"
        r"(?:<[^>]*>\s*)?[\w<>\[\],.? ]*?\b\w+\s*\("
    ),
)
_GRAMMARS = {
    ".js": _JS,
    ".jsx": _JS,
    ".mjs": _JS,
    ".cjs": _JS,
    ".ts": _JS,
    ".tsx": _JS,
    ".mts": _JS,
    ".cts": _JS,
    ".go": _GO,
    ".rs": _RUST,
    ".java": _JAVA,
}
OUTLINED_SUFFIXES = frozenset({".py", ".pyi", *_GRAMMARS})
"""File suffixes the repo map outlines."""


def outline(path: str, source: str) -> list[Definition]:
    """The top-level definitions of ``source`` (the text of ``path``); empty for a language
    not outlined, or Python that does not parse."""
    suffix = PurePosixPath(path).suffix
    if suffix in (".py", ".pyi"):
        return _python(source)
    grammar = _GRAMMARS.get(suffix)
    return _by_lines(source, grammar) if grammar else []


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def _python(source: str) -> list[Definition]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: list[Definition] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
            node.name.startswith("_")
        ):
            continue  # private: the map shows what other modules use
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(Definition(_python_function(node)))
        elif isinstance(node, ast.ClassDef):
            found.append(_python_class(node))
    return found[:MAX_DEFINITIONS]


def _python_function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    keyword = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return _clip(f"{keyword} {node.name}({ast.unparse(node.args)}){returns}")


def _python_class(node: ast.ClassDef) -> Definition:
    bases = [ast.unparse(base) for base in (*node.bases, *node.keywords)]
    signature = _clip(f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}")
    members = [
        _python_function(item)
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        and (not item.name.startswith("_") or item.name in ("__init__", "__call__"))
    ]
    return Definition(signature, tuple(members[:MAX_MEMBERS]))


def _by_lines(source: str, grammar: _Grammar) -> list[Definition]:
    found: list[Definition] = []
    members: list[str] = []
    member_indent: str | None = None  # a container's members sit at its first line's indent
    in_container = False
    for line in source.splitlines():
        stripped = line.lstrip()
        if grammar.top.match(line):
            _close(found, members)
            members, member_indent = [], None
            in_container = bool(grammar.container.match(line)) and not line.rstrip().endswith("}")
            found.append(Definition(_declaration(line)))
        elif line[:1] == "}":
            in_container = False
        elif in_container and stripped:
            indent = line[: len(line) - len(stripped)]
            member_indent = indent if member_indent is None else member_indent
            if indent and indent == member_indent and grammar.member.match(stripped):
                members.append(_declaration(line))
    _close(found, members)
    return found[:MAX_DEFINITIONS]


def _close(found: list[Definition], members: list[str]) -> None:
    if found and members:
        found[-1] = Definition(found[-1].signature, tuple(members[:MAX_MEMBERS]))


def _declaration(line: str) -> str:
    line = line.strip()
    for end in (" {", "{"):
        if line.endswith(end):
            line = line[: -len(end)]
    return _clip(line.rstrip())
