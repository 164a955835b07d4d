"""The agent's file tools in the box (probe, read, ls, grep, glob), run by ``tool`` calls.

The supervisor imports this module on the first ``tool`` call and runs each request in a
child it forks (``spawning.fork_operation``), as the box user an exec call runs as; the
request is ``{"op": ..., ...}`` with absolute paths, and the child writes one JSON object
to its stdout: ``{"ok": ...}``, ``{"error": "..."}`` or
``{"missing": path, "suggestions": [...]}``.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox"}
    | {".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
SNIFF = 8192
SUGGEST_SCAN = 20000  # entries looked at when searching the tree for a similar name
COUNT_LIMIT = 10000  # grep stops counting matches here
MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"SQLite format 3", "an SQLite database"),
    (b"\xca\xfe\xba\xbe", "a Java class or Mach-O file"),
)
REASONS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EROFS: "read-only file system",
    errno.ELOOP: "too many levels of symbolic links",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EISDIR: "it is a directory",
}


class Refused(Exception):
    """A request the model can correct (a bad pattern, a file where a directory belongs)."""


def binary_kind(head: bytes) -> str | None:
    """What a file whose content starts with ``head`` is, or None for text."""
    for magic, kind in MAGIC:
        if head.startswith(magic):
            return kind
    return "binary data" if b"\0" in head else None


def walk(root: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk in sorted order, without version-control and cache directories."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(name for name in dirnames if name not in SKIP_DIRS)
        yield dirpath, dirnames, sorted(filenames)


def suggest(path: str, workdir: str) -> list[str]:
    """Existing paths the model may have meant by a missing ``path``, best first."""
    ancestor, child = path, os.path.basename(path)
    while ancestor != "/" and not os.path.exists(ancestor):
        ancestor, child = os.path.dirname(ancestor), os.path.basename(ancestor)
    target = os.path.basename(path)
    by_name: dict[str, list[str]] = {}
    seen = 0
    for dirpath, dirnames, filenames in walk(workdir):
        for name in dirnames + filenames:
            by_name.setdefault(name, []).append(os.path.join(dirpath, name))
            seen += 1
        if seen > SUGGEST_SCAN:
            break
    found = list(by_name.get(target, []))
    try:
        names = sorted(os.listdir(ancestor))
    except OSError:
        names = []
    close = difflib.get_close_matches(child, names, 3, 0.6)
    found += [os.path.join(ancestor, name) for name in close]
    for name in difflib.get_close_matches(target, list(by_name), 3, 0.75):
        found += by_name[name][:2]
    unique = [p for p in dict.fromkeys(found) if p != path]
    return unique[:5]


def op_probe(request: dict[str, Any]) -> dict[str, Any]:
    """What is at a path, and whether it can be written."""
    path = request["path"]
    try:
        info = os.stat(path)
    except FileNotFoundError:
        ancestor = os.path.dirname(path)
        while ancestor != "/" and not os.path.exists(ancestor):
            ancestor = os.path.dirname(ancestor)
        writable = os.path.isdir(ancestor) and os.access(ancestor, os.W_OK)
        found = suggest(path, request["workdir"]) if request.get("suggest") else []
        return {"kind": "missing", "writable": writable, "blocker": ancestor, "suggestions": found}
    if stat.S_ISDIR(info.st_mode):
        return {"kind": "dir"}
    if not stat.S_ISREG(info.st_mode):
        return {"kind": "other"}
    with open(path, "rb") as handle:
        head = handle.read(SNIFF)
    writable = os.access(path, os.W_OK)
    return {"kind": "file", "size": info.st_size, "binary": binary_kind(head), "writable": writable}


def _line_text(raw: bytes, max_line: int) -> tuple[str, bool]:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    text = raw.decode("utf-8", "replace")
    if len(text) <= max_line:
        return text, False
    return f"{text[:max_line]} [... {len(text) - max_line} more characters]", True


def _lines_left(handle: Any, last: bytes) -> int:
    """Lines after the current position (``last`` is the line just read)."""
    count, tail = 0, last
    while True:
        chunk = handle.read(1 << 20)
        if not chunk:
            break
        count += chunk.count(b"\n")
        tail = chunk
    return count + (1 if tail and not tail.endswith(b"\n") else 0)


def _window(handle: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Lines from ``offset`` on, up to ``limit`` lines or ``max_bytes``; counts them all."""
    offset, limit = request["offset"], request["limit"]
    lines: list[str] = []
    stop: str | None = None
    used = cut = total = 0
    for number, raw in enumerate(handle, 1):
        total = number
        if number < offset:
            continue
        text, shortened = _line_text(raw, request["max_line"])
        cost = len(text.encode("utf-8", "replace")) + 8
        if len(lines) >= limit or (lines and used + cost > request["max_bytes"]):
            stop = "limit" if len(lines) >= limit else "bytes"
            total += _lines_left(handle, raw) if raw.endswith(b"\n") else 0
            break
        lines.append(text)
        used, cut = used + cost, cut + shortened
    return {"kind": "file", "lines": lines, "total": total, "stop": stop, "cut": cut}


def op_read(request: dict[str, Any]) -> dict[str, Any]:
    """A window of a text file's lines (or what the path is, when it is no text file)."""
    path = request["path"]
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        return {"kind": "dir", **ls_entries(path, request["max_entries"])}
    if not stat.S_ISREG(info.st_mode):
        return {"kind": "other"}
    with open(path, "rb") as handle:
        kind = binary_kind(handle.read(SNIFF))
        if kind is not None:
            return {"kind": "binary", "type": kind, "size": info.st_size}
        handle.seek(0)
        return _window(handle, request)


def ls_entries(path: str, cap: int) -> dict[str, Any]:
    """The first ``cap`` entries of a directory, directories first, and how many it has.

    Each entry: name, type (dir, file, link, other), size, and a link's target."""
    entries = []
    with os.scandir(path) as listing:
        for entry in listing:
            item: dict[str, Any] = {"name": entry.name, "type": "other", "size": 0}
            if entry.is_symlink():
                item.update(type="link", target=os.readlink(entry.path))
            elif entry.is_dir():
                item["type"] = "dir"
            elif entry.is_file():
                item.update(type="file", size=entry.stat().st_size)
            entries.append(item)
    entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
    return {"entries": entries[:cap], "total": len(entries)}


def op_ls(request: dict[str, Any]) -> dict[str, Any]:
    """What a directory holds (or the size of a file)."""
    info = os.stat(request["path"])
    if not stat.S_ISDIR(info.st_mode):
        return {"kind": "file", "size": info.st_size}
    return {"kind": "dir", **ls_entries(request["path"], request["max_entries"])}


def _glob_segment(part: str) -> str:
    out, i = [], 0
    while i < len(part):
        char = part[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and part.find("]", i + 2) > 0:
            end = part.find("]", i + 2)
            body = part[i + 1 : end]
            negate = body[:1] in ("!", "^")
            out.append("[" + ("^" if negate else "") + body[negate:].replace("\\", "\\\\") + "]")
            i = end
        elif char == "{" and part.find("}", i) > 0:
            end = part.find("}", i)
            options = part[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_glob_segment(o) for o in options) + ")")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def compile_glob(pattern: str, anywhere: bool) -> re.Pattern[str]:
    """A glob (``*``, ``?``, ``[ab]``, ``{a,b}``, ``**`` for any depth) as a regex over
    relative paths; ``anywhere`` lets it match below any directory (for bare names)."""
    parts = pattern.strip("/").split("/")
    if anywhere:
        parts = ["**", *parts]
    out = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_glob_segment(part) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z")


def _grep_file(
    path: str, regex: re.Pattern[str], keep: int, max_line: int
) -> tuple[list[list[Any]], int] | None:
    """Up to ``keep`` matching lines of a file and the count of all; None for binary."""
    kept: list[list[Any]] = []
    count = 0
    try:
        with open(path, "rb") as handle:
            if binary_kind(handle.read(SNIFF)) is not None:
                return None
            handle.seek(0)
            for number, raw in enumerate(handle, 1):
                text, _ = _line_text(raw, max_line)
                if regex.search(text):
                    count += 1
                    if len(kept) < keep:
                        kept.append([path, number, text])
    except OSError:  # vanished or unreadable while we walked: not the model's concern
        return [], 0
    return kept, count


def _files_under(root: str) -> Iterator[str]:
    if not os.path.isdir(root):
        yield root
        return
    for dirpath, _, filenames in walk(root):
        for name in filenames:
            yield os.path.join(dirpath, name)


def _regex(request: dict[str, Any]) -> re.Pattern[str]:
    pattern = request["pattern"]
    if request["literal"]:
        pattern = re.escape(pattern)
    try:
        return re.compile(pattern, re.IGNORECASE if request["ignore_case"] else 0)
    except re.error as exc:
        raise Refused(
            f"the pattern is not a valid regular expression ({exc}); escape special "
            "characters with a backslash, or set literal to search for the text as it is"
        ) from None


def op_grep(request: dict[str, Any]) -> dict[str, Any]:
    """Lines that match a regular expression, in files under a path."""
    regex = _regex(request)
    root = request["path"]
    os.stat(root)
    glob = request.get("glob")
    only = compile_glob(glob, "/" not in glob) if glob else None
    matches: list[list[Any]] = []
    total = files = 0
    for path in _files_under(root):
        if only is not None and path != root and not only.match(os.path.relpath(path, root)):
            continue
        keep = request["max_matches"] - len(matches)
        found = _grep_file(path, regex, keep, request["max_line"])
        if found is None:
            continue
        matches += found[0]
        files += found[1] > 0
        total += found[1]
        if total >= COUNT_LIMIT:
            break
    stopped = total >= COUNT_LIMIT
    return {"matches": matches, "total": total, "files": files, "stopped": stopped}


def _split_static(root: str, pattern: str) -> tuple[str, str, bool]:
    """Move the leading directories of ``pattern`` that hold no wildcard into ``root``."""
    anywhere = "/" not in pattern
    if pattern.startswith("/"):
        root, pattern = "/", pattern.lstrip("/")
    parts = pattern.split("/")
    static = 0
    while static < len(parts) - 1 and not re.search(r"[*?\[{]", parts[static]):
        static += 1
    base = os.path.normpath(os.path.join(root, *parts[:static]))
    return base, "/".join(parts[static:]), anywhere


def op_glob(request: dict[str, Any]) -> dict[str, Any]:
    """Paths under a directory that match a glob pattern."""
    root, pattern, anywhere = _split_static(request["path"], request["pattern"])
    os.stat(root)
    regex = compile_glob(pattern, anywhere)
    found: list[str] = []
    total = 0
    for dirpath, dirnames, filenames in walk(root):
        for name, suffix in [(d, "/") for d in dirnames] + [(f, "") for f in filenames]:
            path = os.path.join(dirpath, name)
            if regex.match(os.path.relpath(path, root)):
                total += 1
                if len(found) < request["max_results"]:
                    found.append(path + suffix)
    return {"paths": sorted(found), "total": total}


OPS = {"probe": op_probe, "read": op_read, "ls": op_ls, "grep": op_grep, "glob": op_glob}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Run one request and wrap its outcome for the host."""
    try:
        return {"ok": OPS[request["op"]](request)}
    except FileNotFoundError as exc:
        path = exc.filename or request.get("path", "")
        return {"missing": path, "suggestions": suggest(path, request["workdir"])}
    except (Refused, ValueError) as exc:  # ValueError: a name the file system cannot take
        return {"error": str(exc)}
    except OSError as exc:
        reason = REASONS.get(exc.errno or 0, exc.strerror or str(exc))
        return {"error": f"{exc.filename}: {reason}" if exc.filename else reason}


def run(request: dict[str, Any]) -> bytes:
    """The answer to one request, as the bytes a tool call writes to its stdout."""
    return json.dumps(answer(request)).encode()
