"""What a task and a change are about: the tests, files and names the task's text names, and
the paths the change touched. A failure either concerns is the agent's, whatever the base
commit did.

A test is the task's when the task names it (``tests/t.py::test_x``, ``test_x``,
``TestClamp``, ``midpoint::tests::large``, its file, a quoted ``describe``/``it`` title) or
names an identifier it tests (``slugify()`` and ``test_slugify_tabs``). It is the change's
when the change touched its file, or the module it tests (``tests/test_slug.py`` tests
``slug.py``, ``clamp_test.go`` tests ``clamp.go``, ``slug::tests::x`` tests ``src/slug.rs``,
``tests::x`` the crate's root). Output that names no test (a lint's, a script's) concerns
them when a line of it names a path the change touched or the task names, or a name the task
names.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from golem.checks.contracts import TestFailure

__all__ = ["Concern", "test_paths"]

CODE = (
    "py",
    "pyi",
    "rs",
    "go",
    "js",
    "jsx",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "mts",
    "cts",
    "java",
    "kt",
    "rb",
    "php",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cs",
    "swift",
    "scala",
    "ex",
    "exs",
    "vue",
    "svelte",
    "sh",
)
"""Extensions of source files: a module a test can test."""
NAMED = (*CODE, "toml", "yaml", "yml", "json", "cfg", "ini", "md", "txt")
_PATH = re.compile(
    rf"(?<![\w/.-])(?:\.?/)?((?:[\w.-]+/)*[\w-][\w.-]*\.(?:{'|'.join(NAMED)}))(?![\w/-])"
    r"|(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+)(?![\w/-])"
)
_TEST_ID = re.compile(r"(?<![\w./-])[\w./-]+(?:::[\w.\[\]-]+)+")
_QUOTED = re.compile(r"`([^`\n]{3,120})`|\"([^\"\n]{4,120})\"|“([^”\n]{4,120})”|'([^'\n]{4,120})'")
_CALLED = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\(")
_WORD = re.compile(r"[A-Za-z_][\w]*")
_SNAKE = re.compile(r"^_*[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+_*$")
_CAMEL = re.compile(r"^[A-Za-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+$")
_PARTS = re.compile(r"::|[\u203a>]|[./\\\s()\[\],:]+")
_SUBWORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_GENERIC = frozenset(
    {
        "test",
        "tests",
        "testing",
        "spec",
        "specs",
        "self",
        "main",
        "init",
        "none",
        "true",
        "false",
        "null",
        "error",
        "errors",
        "fail",
        "fails",
        "failed",
        "src",
        "lib",
        "mod",
        "index",
        "the",
        "and",
        "for",
        "with",
        "this",
        "that",
    }
)
_ROOT_FILES = frozenset({"lib.rs", "main.rs"})
_PACKAGE_FILES = frozenset({"__init__.py", "mod.rs", "index.js", "index.ts", "index.mjs"})
MAX_CHANGED = 2000


@dataclass(frozen=True)
class Concern:
    """What the task names and what the change touched."""

    paths: frozenset[str] = frozenset()
    """Paths the task names (``tests/test_slug.py``, ``slug.rs``)."""
    names: frozenset[str] = frozenset()
    """Identifiers and test names the task names (``test_x``, ``slugify``, ``TestClamp``)."""
    phrases: frozenset[str] = frozenset()
    """Quoted titles the task names (lower case): a ``describe``/``it`` test's."""
    changed: frozenset[str] = frozenset()
    """Paths (relative to the repository) the change touched."""
    _modules: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def of(cls, task: str, changed: Iterable[str] = ()) -> Concern:
        """The concern of a task's text and the paths its change touched."""
        touched = frozenset(_clean(path) for path in list(changed)[:MAX_CHANGED])
        return cls(
            paths=frozenset(_named_paths(task)),
            names=frozenset(_named_identifiers(task)),
            phrases=frozenset(_named_phrases(task)),
            changed=touched,
            _modules=frozenset(m for path in touched for m in _modules_of(path)),
        )

    def test(self, failure: TestFailure) -> bool:
        """Whether the task or the change concerns this failing test."""
        return self.task_names(failure) or self.change_touches(failure)

    def task_names(self, failure: TestFailure) -> bool:
        """Whether the task names the test, its file, or an identifier it tests."""
        paths = test_paths(failure)
        if any(_same_path(mine, theirs) for mine in self.paths for theirs in paths):
            return True
        name = failure.name
        parts = {part for part in _PARTS.split(name) if part}
        if self.names & parts:
            return True
        subwords = {word.lower() for part in parts for word in _SUBWORDS.findall(part)}
        if any(_subword_match(named, subwords) for named in self.names):
            return True
        lowered = name.lower()
        return any(phrase in lowered for phrase in self.phrases)

    def change_touches(self, failure: TestFailure) -> bool:
        """Whether the change touched the test's file or the module it tests."""
        paths = test_paths(failure)
        if any(_same_path(mine, theirs) for mine in self.changed for theirs in paths):
            return True
        return bool(self._modules & _tested_modules(failure, paths))

    def text(self, text: str) -> bool:
        """Whether output that names no test concerns the task or the change: a line of it
        names a path either names, or a name the task names."""
        for path in _PATH.finditer(text):
            found = _clean(path.group(1) or path.group(2))
            if any(_same_path(mine, found) for mine in (*self.changed, *self.paths)):
                return True
        words = set(_WORD.findall(text))
        if self.names & words:
            return True
        lowered = text.lower()
        return any(phrase in lowered for phrase in self.phrases)


def test_paths(failure: TestFailure) -> list[str]:
    """The files a failure names: the path part of its name (``tests/t.py::test_x``, a
    jest ``src/a.test.ts > suite > it``) and where it failed."""
    found = [_clean(match.group(1) or match.group(2)) for match in _PATH.finditer(failure.name)]
    if failure.file:
        found.append(_clean(failure.file))
    return list(dict.fromkeys(path for path in found if path))


def _named_paths(task: str) -> set[str]:
    paths = {_clean(match.group(1) or match.group(2)) for match in _PATH.finditer(task)}
    return {path for path in paths if path and not path.startswith(("http", "www."))}


def _named_identifiers(task: str) -> set[str]:
    """Test ids, identifiers called (``slugify()``), quoted in code (`` `x` ``), and
    words that can only be code (``snake_case``, ``camelCase``, ``TestX``)."""
    names: set[str] = set()
    for test_id in _TEST_ID.findall(task):
        names.update(part for part in _PARTS.split(test_id) if part)
    for called in _CALLED.findall(task):
        names.update(called.split("."))
    for quoted in _QUOTED.finditer(task):
        code = quoted.group(1)
        if code is not None and " " not in code.strip():
            names.update(part for part in _PARTS.split(code) if part)
    for word in _WORD.findall(task):
        if _SNAKE.match(word) or _CAMEL.match(word) or re.match(r"^Test[A-Z_]", word):
            names.add(word)
    return {name for name in names if len(name) >= 3 and name.lower() not in _GENERIC}


def _named_phrases(task: str) -> set[str]:
    """Quoted titles of several words (a ``describe``/``it`` test's)."""
    phrases = set()
    for quoted in _QUOTED.finditer(task):
        text = next(group for group in quoted.groups() if group is not None).strip()
        if " " in text:
            phrases.add(text.lower())
    return phrases


def _subword_match(named: str, subwords: set[str]) -> bool:
    """An identifier the task names is a word of the test's name (``slugify`` in
    ``test_slugify_tabs``): for names that can only be code, not a plain word."""
    if not (_SNAKE.match(named) or _CAMEL.match(named)) and named.lower() not in subwords:
        return False
    words = [word.lower() for word in _SUBWORDS.findall(named)]
    return bool(words) and all(word in subwords for word in words)


def _modules_of(path: str) -> set[str]:
    """The modules a changed source file is: its stem (``slug`` of ``src/slug.rs``), its
    package's name for ``__init__.py``/``mod.rs``/``index.js``, ``<crate root>`` for a
    crate's ``lib.rs``/``main.rs``; test files and non-source files are none."""
    name = posixpath.basename(path)
    stem, extension = posixpath.splitext(name)
    if extension.lstrip(".") not in CODE or _tested_stem(stem) != stem:
        return set()
    directory = posixpath.basename(posixpath.dirname(path))
    if name in _ROOT_FILES:
        return {"<crate root>", directory} - {""}
    if name in _PACKAGE_FILES:
        return {directory} - {""}
    return {stem}


def _tested_modules(failure: TestFailure, paths: list[str]) -> set[str]:
    """The modules a failing test tests: its file's stem without the test marks
    (``tests/test_slug.py``: ``slug``), the name's modules (``slug::tests::x``: ``slug``;
    ``tests::x``: the crate's root; ``test_slug.SlugTest.test_x``: ``slug``)."""
    modules = {_tested_stem(posixpath.splitext(posixpath.basename(path))[0]) for path in paths}
    name = failure.name
    if "::" in name and not re.search(r"\.\w+::", name):  # a Rust path, not pytest's
        parts = name.split("::")
        before = parts[: parts.index("tests")] if "tests" in parts else parts[:-1]
        modules.update(before or ["<crate root>"])
    elif re.fullmatch(r"[\w.]+", name) and "." in name:  # unittest's module.Class.method
        modules.update(_tested_stem(part) for part in name.split(".")[:-1])
    return {module for module in modules if module and module.lower() not in _GENERIC}


def _tested_stem(stem: str) -> str:
    """A test file's stem without its marks: ``test_slug``, ``slug_test``, ``slug.test``,
    ``slug.spec``, ``SlugTest``: ``slug``/``Slug``."""
    stem = re.sub(r"\.(?:test|spec|e2e|unit)$", "", stem)
    stem = re.sub(r"^tests?_|_tests?$|_spec$", "", stem)
    return re.sub(r"(?<=[a-z0-9])Tests?$", "", stem)


def _same_path(one: str, other: str) -> bool:
    """Two paths name the same file when one ends with the other (a check run in a
    subdirectory prints paths relative to it)."""
    if not one or not other:
        return False
    return one == other or one.endswith("/" + other) or other.endswith("/" + one)


def _clean(path: str) -> str:
    path = re.sub(r"(?::\d+)+$", "", path.strip().strip("`'\""))
    path = posixpath.normpath(path) if path else ""
    return path.removeprefix("./").removeprefix("/workspace/").lstrip("/") if path != "." else ""
