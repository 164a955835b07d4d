"""The files an install could read, found in the commit it installs from: what the install
key covers (``golem.blueprint.dependencies``) besides the repository's declared keys.

Read from git at the commit (never from the checkout, whose symlinks could lead anywhere),
by one rule that knows no tool:

- the directories an install command runs in or names (the root; ``web`` of ``cd web &&``
  or ``make -C web``; ``libs/a`` of ``pip install ./libs/a``): their own files
  (``Makefile``, ``package.json``, ``setup.py``, ``.npmrc``, ``install.sh``, ``.golem.toml``)
  and everything beneath their dot-directories (tools' configuration: ``.cargo``,
  ``.yarn``, ``.mvn``), not their other subdirectories;
- every file a command's word names (``./install.sh``, ``-r requirements-dev.txt``,
  ``--requirement=ci.txt``, ``sh scripts/bootstrap``);
- every file named in the text of a file found so far, transitively: a word that is a
  tracked file's path from the naming file's directory or from the root, or ends in one
  (a Makefile recipe's ``./scripts/deps.sh``, package.json's ``node scripts/postinstall.js``,
  ``-r base.txt``, ``. "$(dirname "$0")/lib.sh"``, ``$ROOT/tools/setup.sh``); a symlink
  names its target.

A directory that only a file's text names (a pyproject's ``testpaths = ["tests"]``) adds
nothing, and prose (``README.md``, ``docs/*.rst``: ``PROSE``) counts by its content but is
not read for names: that is what keeps a change to the sources or the documentation from
changing the key. Files are read for names up to ``SCAN_FILE_BYTES`` each and
``SCAN_BYTES`` in all; a file past them still counts by its content. A path an install
computes (``cat "$dir/$(echo name)"``) is not found: the repository names it in
``[dependencies] keys``. Whatever the key misses never crosses branches: only a commit of
the base branch writes the base's archive.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from golem.core.errors import ConfigError
from golem.forge import git_environment, run_git_blocking

__all__ = ["PROSE", "SCAN_BYTES", "SCAN_FILE_BYTES", "CommitTree", "install_inputs"]

SCAN_FILE_BYTES = 256 * 1024
"""A file larger than this (a lockfile, a bundled tool) is keyed but not read for names."""
SCAN_BYTES = 4 * 1024 * 1024
"""What one key reads for names in all, at most."""
PROSE = (".md", ".markdown", ".rst", ".adoc", ".asciidoc", ".org", ".rdoc", ".textile")
"""Documentation: written for people, naming files it explains, never run by an install."""
LONGEST_NAME = 4096
SUFFIXES = 8
"""How many leading directories of a word are tried away (``$ROOT/tools/x`` -> ``tools/x``)."""

WORD = re.compile(rb"[^\s'\"`$=,;:|&<>(){}\[\]\\*?!#%^]+")
"""A word of a command or a file: a run of characters a path may hold, split where a shell,
a Makefile, JSON, TOML or YAML would end it."""


@dataclass(frozen=True)
class Entry:
    """One tracked path of a commit: a blob (file or symlink) or a submodule's commit."""

    oid: str
    size: int | None
    """A blob's size; None for a submodule."""


class CommitTree:
    """The tracked files of one commit, as ``git ls-tree`` lists them."""

    def __init__(self, workspace: Path, entries: Mapping[str, Entry]) -> None:
        self.workspace = workspace
        self.entries = dict(entries)
        self.directories = {""}
        self._own: dict[str, list[str]] = {}
        for path in self.entries:
            names = path.split("/")
            self._own.setdefault("/".join(names[:-1]), []).append(path)
            for depth in range(len(names) - 1):
                self.directories.add("/".join(names[: depth + 1]))
                if names[depth].startswith("."):  # beneath a dot-directory of names[:depth]
                    self._own.setdefault("/".join(names[:depth]), []).append(path)
        self.basenames = {posixpath.basename(path) for path in [*self.entries, *self.directories]}
        """The last name of every tracked path: a word ending in another names none."""

    @classmethod
    def read(cls, workspace: Path, rev: str = "HEAD") -> CommitTree:
        """The files of ``rev`` in the repository at ``workspace``."""
        args = ["ls-tree", "-r", "-z", "-l", "--full-tree", rev]
        done = run_git_blocking("git", args, cwd=workspace, env=_env())
        if done.returncode != 0:
            raise ConfigError(
                f"could not list the files of {rev} for the dependency key: "
                f"{done.stderr.strip()[-300:]}; check the repository's checkout"
            )
        entries: dict[str, Entry] = {}
        for line in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, path = line.partition("\t")
            if path:
                _, kind, oid, size = meta.split()
                entries[path] = Entry(oid, int(size) if kind == "blob" else None)
        return cls(workspace, entries)

    def content_id(self, name: str) -> str:
        """What ``name`` holds: a file's object id; for a directory or a glob pattern
        (``requirements/*.txt``), a digest of the files it matches; "" when none does."""
        if name in self.entries:
            return self.entries[name].oid
        matched = sorted(
            f"{path} {entry.oid}\n"
            for path, entry in self.entries.items()
            if path.startswith(name + "/") or fnmatch.fnmatchcase(path, name)
        )
        return hashlib.sha256("".join(matched).encode()).hexdigest() if matched else ""

    def files_of(self, directory: str) -> list[str]:
        """A directory's own files and those beneath its dot-directories."""
        return self._own.get(directory, [])

    def texts(self, paths: Sequence[str]) -> dict[str, bytes]:
        """The content of each of ``paths`` (blobs), read in one ``git cat-file``."""
        if not paths:
            return {}
        wanted = "".join(f"{self.entries[path].oid}\n" for path in paths).encode()
        args = ["cat-file", "--batch"]
        done = run_git_blocking("git", args, cwd=self.workspace, env=_env(), stdin=wanted)
        if done.returncode != 0:
            raise ConfigError(
                f"could not read the install's files for the dependency key: "
                f"{done.stderr.strip()[-300:]}; check the repository's checkout"
            )
        return dict(zip(paths, _batch(done.stdout), strict=True))


def install_inputs(tree: CommitTree, commands: Sequence[str]) -> dict[str, str]:
    """Every file ``commands`` could read by the rule above -> its object id."""
    found: set[str] = set()
    to_read: set[str] = set()
    directories = {""}
    for command in commands:
        text = command.encode("utf-8", "surrogateescape")
        named = [name for name in _names(text, [""], tree) if name in tree.directories]
        directories.update(named)
        files = {name for name in _names(text, [*named, ""], tree) if name in tree.entries}
        found |= files
        to_read |= files
    for directory in directories:
        for path in tree.files_of(directory):
            found.add(path)
            if not _hidden(path, directory):
                to_read.add(path)
    _follow(tree, found, sorted(to_read))
    return {path: tree.entries[path].oid for path in sorted(found)}


def _hidden(path: str, directory: str) -> bool:
    """Whether ``path`` lies beneath a dot-directory of ``directory``."""
    rest = path[len(directory) + 1 :] if directory else path
    return "/" in rest and rest.startswith(".")


def _follow(tree: CommitTree, found: set[str], pending: list[str]) -> None:
    """Read the pending files for names, adding the files they name (and reading those in
    turn), until none is new or the budget is spent."""
    budget = SCAN_BYTES
    queued = set(pending)
    while pending:
        batch = []
        for path in pending:
            size = tree.entries[path].size
            if size is None or size > min(SCAN_FILE_BYTES, budget):
                continue
            if not path.lower().endswith(PROSE):
                budget -= size
                batch.append(path)
        pending = []
        for path, text in tree.texts(batch).items():
            if b"\0" in text:
                continue  # not text
            for name in _names(text, [posixpath.dirname(path), ""], tree):
                if name in tree.entries:
                    found.add(name)
                    if name not in queued:
                        queued.add(name)
                        pending.append(name)
        pending.sort()


def _names(text: bytes, bases: Sequence[str], tree: CommitTree) -> Iterator[str]:
    """The tracked paths (files or directories) the words of ``text`` name, in order."""
    for word in dict.fromkeys(WORD.findall(text)):
        if len(word) <= LONGEST_NAME:
            token = word.decode("utf-8", "surrogateescape")
            found = next(_candidates(token, bases, tree), None)
            if found is not None:
                yield found


def _candidates(token: str, bases: Sequence[str], tree: CommitTree) -> Iterator[str]:
    """The tracked paths ``token`` may name: itself, without a short option's letter
    (``-rrequirements.txt``), without leading directories (``$ROOT/tools/x``), from each
    of ``bases``; the most literal first."""
    forms = [token]
    if len(token) > 2 and token[0] == "-" and token[1] != "-":
        forms.append(token[2:])
    for form in forms:
        if posixpath.basename(form.rstrip("/")) not in tree.basenames:
            continue  # no tracked path ends so: most words of a file
        parts = form.split("/")
        for start in range(min(len(parts), SUFFIXES)):
            rest = "/".join(parts[start:])
            for base in bases if rest else []:
                path = posixpath.normpath(posixpath.join(base, rest))
                if path in tree.entries or path in tree.directories:
                    yield path  # never "." (the root): normpath's answer for it


def _batch(output: bytes) -> Iterator[bytes]:
    """The contents ``git cat-file --batch`` printed, in order."""
    at = 0
    while at < len(output):
        end = output.index(b"\n", at)
        header = output[at:end].split()
        if len(header) != 3:
            yield b""  # missing
            at = end + 1
            continue
        size = int(header[2])
        yield output[end + 1 : end + 1 + size]
        at = end + 1 + size + 1


def _env() -> dict[str, str]:
    return git_environment(isolated=True, extra={"GIT_OPTIONAL_LOCKS": "0"})
