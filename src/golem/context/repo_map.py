"""A compact map of a repository: its tree, and each source file's top-level definitions,
fitted into a token budget.

The tree is ``list_repo_files``: what git tracks or does not ignore, without vendored or
generated directories. Definitions come from ``outline``. When the map is larger than its
budget, detail goes in this order, each step only as far as needed:

1. class members (methods), file by file;
2. the definitions themselves (the file name stays);
3. whole directories, collapsed to one line ``name/ (N files)``, deepest first.

Within steps 1 and 2, the least relevant files go first: files whose path and definitions
share fewer words with the task, then files outside the working directory, deeper before
shallower, then by path. In step 3, directories outside the working directory go before
those inside it. Files the task names (``keep``) and the directories holding them are cut
last: only when everything else is down to collapsed directories do their members, then
their definitions go (hydration gives these files' text anyway). A map still over the
budget after that says so (``fits``).

The idea comes from aider's repo map, which ranks definitions by how often they are
referenced; this one ranks by cheap signals that are easy to predict instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from golem.context.files import file_under, list_repo_files, read_text
from golem.context.outline import OUTLINED_SUFFIXES, Definition, outline
from golem.context.tokens import BYTES_PER_TOKEN, estimate_tokens

__all__ = ["OUTLINE_MAX_BYTES", "OUTLINE_READ_BYTES", "RepoMap", "build_repo_map"]

OUTLINE_MAX_BYTES = 256 * 1024
"""Files larger than this are listed without definitions."""

OUTLINE_READ_BYTES = 16 * 1024 * 1024
"""At most this many bytes are read for outlines per map; further files are listed only."""

LEGEND = "{count} files. Directories end with /; a file's definitions are indented under it."
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


@dataclass(frozen=True)
class RepoMap:
    """The map as text, and what was cut from it to fit."""

    text: str
    tokens: int
    files: int
    """How many files the repository lists."""
    left_out: tuple[str, ...] = ()
    """What the budget cut, e.g. ``definitions in 12 files``."""
    fits: bool = True
    """False when even the most compact map is over the budget."""


@dataclass
class _File:
    path: str
    depth: int
    definitions: list[Definition]
    kept: bool
    rank: tuple[bool, int, bool, int, str] = (False, 0, False, 0, "")
    level: int = 2  # 2: definitions and members, 1: definitions, 0: the name only
    costs: tuple[int, ...] = ()

    def define(self, definitions: list[Definition]) -> None:
        self.definitions = definitions
        self.costs = ()

    def lines(self, level: int | None = None) -> list[str]:
        level = self.level if level is None else level
        indent = "  " * self.depth
        out = [indent + PurePosixPath(self.path).name]
        for definition in self.definitions if level > 0 else ():
            out.append(f"{indent}  {definition.signature}")
            out.extend(f"{indent}    {member}" for member in definition.members if level > 1)
        return out

    def cost(self, level: int | None = None) -> int:
        if not self.costs:
            self.costs = tuple(_size(self.lines(each)) for each in (0, 1, 2))
        return self.costs[self.level if level is None else level]


@dataclass
class _Dir:
    path: str
    depth: int
    files: list[_File] = field(default_factory=list)
    dirs: dict[str, _Dir] = field(default_factory=dict)
    collapsed: bool = False
    count: int = 0

    def line(self) -> str:
        name = PurePosixPath(self.path).name
        suffix = f" ({self.count} file{'s' * (self.count != 1)})" if self.collapsed else ""
        return f"{'  ' * (self.depth - 1)}{name}/{suffix}"

    def walk(self) -> Iterable[_Dir]:
        yield self
        for sub in self.dirs.values():
            yield from sub.walk()


def build_repo_map(
    repo: str | os.PathLike[str],
    *,
    budget_tokens: int,
    keep: Sequence[str] = (),
    workdir: str = "",
    mentions: str = "",
) -> RepoMap:
    """The map of ``repo`` within ``budget_tokens`` (estimated), keeping the files in
    ``keep`` in full; ``workdir`` and the words of ``mentions`` (the task) rank the rest."""
    paths = list_repo_files(Path(repo))
    words = {word.lower() for word in WORD.findall(mentions)}
    files = [_File(path, path.count("/"), [], path in keep) for path in paths]
    root = _tree(files)
    budget = budget_tokens * BYTES_PER_TOKEN - _size(_frame(len(paths), []))
    unread = _read_outlines(Path(repo), files, words, workdir, budget - _subtree_costs(root, {}))
    for item in files:
        item.rank = _rank(item, words, workdir)
    total = _subtree_costs(root, {})
    left_out: list[str] = []
    others = [item for item in files if not item.kept]
    total = _reduce_files(others, total, budget, left_out, unread=unread)
    total = _collapse_dirs(root, files, workdir, total, budget, left_out)
    named = [item for item in files if item.kept]  # the last resort: given whole elsewhere
    total = _reduce_files(named, total, budget, left_out, whose="named ")
    text = "\n".join(_frame(len(paths), _render(root)))
    return RepoMap(text, estimate_tokens(text), len(paths), tuple(left_out), total <= budget)


def _size(lines: Iterable[str]) -> int:
    return sum(len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines)


def _frame(count: int, body: list[str]) -> list[str]:
    return ["```text", LEGEND.format(count=count), *body, "```"]


def _read_outlines(repo: Path, files: list[_File], words: set[str], workdir: str, room: int) -> int:
    """Outline source files, named ones first, then by how relevant their path looks, until
    the outlines could fill twice the room the bare tree leaves (the rest would be cut
    anyway); how many were left unread."""
    root = os.path.realpath(repo)
    candidates = [item for item in files if PurePosixPath(item.path).suffix in OUTLINED_SUFFIXES]
    candidates.sort(
        key=lambda item: (
            not item.kept,
            -len(_path_words(item.path) & words),
            bool(workdir) and not item.path.startswith(f"{workdir}/"),
            item.depth,
            item.path,
        )
    )
    spent = read = unread = 0
    for item in candidates:
        if not item.kept and (spent > 2 * room or read > OUTLINE_READ_BYTES):
            unread += 1
            continue
        real = file_under(root, item.path)
        text = read_text(real, OUTLINE_MAX_BYTES) if real is not None else None
        if text is None or text.truncated:
            continue
        read += text.size
        item.define(outline(item.path, text.text))
        spent += item.cost(2) - item.cost(0)
    return unread


def _path_words(path: str) -> set[str]:
    return {word.lower() for word in WORD.findall(path)}


def _rank(item: _File, words: set[str], workdir: str) -> tuple[bool, int, bool, int, str]:
    """Sorts least relevant first: kept last, then by shared words, working directory,
    depth (deeper first), path."""
    own = _path_words(item.path)
    for definition in item.definitions:
        own.update(word.lower() for word in WORD.findall(definition.signature))
    in_workdir = not workdir or item.path.startswith(f"{workdir}/")
    return (item.kept, len(own & words), in_workdir, -item.depth, item.path)


def _tree(files: list[_File]) -> _Dir:
    root = _Dir("", 0)
    for item in files:
        node = root
        node.count += 1
        for part in PurePosixPath(item.path).parts[:-1]:
            sub_path = f"{node.path}/{part}" if node.path else part
            node = node.dirs.setdefault(part, _Dir(sub_path, node.depth + 1))
            node.count += 1
        node.files.append(item)
    return root


def _reduce_files(
    files: list[_File],
    total: int,
    budget: int,
    left_out: list[str],
    *,
    whose: str = "",
    unread: int = 0,
) -> int:
    """Lower files' detail, least relevant first, until ``total`` fits ``budget``; files
    left ``unread`` by ``_read_outlines`` count as files whose definitions were cut."""
    order = sorted(files, key=lambda item: item.rank)
    for level, what in ((1, "class members"), (0, "definitions")):
        cut = unread if level == 0 else 0
        for item in order:
            if total <= budget:
                break
            if item.level > level and item.cost(level) < item.cost():
                total -= item.cost() - item.cost(level)
                cut += 1
            item.level = min(item.level, level)
        if cut:
            left_out.append(f"repo map: {what} in {cut} {whose}file{'s' * (cut != 1)}")
    return total


def _collapse_dirs(
    root: _Dir, files: list[_File], workdir: str, total: int, budget: int, left_out: list[str]
) -> int:
    if total <= budget:
        return total
    protected = {""}
    for path in [workdir, *(item.path for item in files if item.kept)]:
        parts = PurePosixPath(path).parts if path else ()
        protected.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    costs: dict[str, int] = {}
    _subtree_costs(root, costs)
    candidates = [node for node in root.walk() if node.path not in protected]
    candidates.sort(
        key=lambda node: (
            not workdir or node.path.startswith(f"{workdir}/"),
            -node.depth,
            node.path,
        )
    )
    collapsed: list[str] = []
    for node in candidates:
        if total <= budget:
            break
        if any(node.path.startswith(f"{path}/") for path in collapsed):
            continue  # inside a directory already collapsed
        before = costs[node.path]
        node.collapsed = True
        saved = before - _size([node.line()])
        total -= saved
        _discount_ancestors(costs, node.path, saved)
        collapsed = [path for path in collapsed if not path.startswith(f"{node.path}/")]
        collapsed.append(node.path)
    if collapsed:
        shown = ", ".join(f"{path}/" for path in sorted(collapsed)[:5])
        more = ", ..." if len(collapsed) > 5 else ""
        count = len(collapsed)
        left_out.append(
            f"repo map: contents of {count} director{'ies' if count != 1 else 'y'} ({shown}{more})"
        )
    return total


def _subtree_costs(node: _Dir, costs: dict[str, int]) -> int:
    """Bytes of ``node``'s lines and all below it, noted for it and each subdirectory."""
    own = _size([node.line()]) if node.path else 0
    files = sum(item.cost() for item in node.files)
    costs[node.path] = own + files + sum(_subtree_costs(sub, costs) for sub in node.dirs.values())
    return costs[node.path]


def _discount_ancestors(costs: dict[str, int], path: str, saved: int) -> None:
    costs[path] -= saved
    parts = PurePosixPath(path).parts
    for i in range(len(parts) - 1, 0, -1):
        costs["/".join(parts[:i])] -= saved
    costs[""] -= saved


def _render(node: _Dir) -> list[str]:
    out: list[str] = []
    for item in sorted(node.files, key=lambda item: item.path):
        out.extend(item.lines())
    for name in sorted(node.dirs):
        sub = node.dirs[name]
        out.append(sub.line())
        if not sub.collapsed:
            out.extend(_render(sub))
    return out
