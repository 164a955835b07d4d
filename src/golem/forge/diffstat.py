"""What a change touched, from ``git diff --numstat -z`` and ``git status --porcelain -z``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DiffStat", "FileChange", "parse_numstat", "parse_status_paths"]


class FileChange(BaseModel):
    """One file a change touched; counts are None for a binary file."""

    model_config = ConfigDict(extra="forbid")

    path: str
    added: int | None
    deleted: int | None
    old_path: str | None = Field(None, description="Where a renamed file came from.")


class DiffStat(BaseModel):
    """The files a change touched, with lines added and deleted."""

    model_config = ConfigDict(extra="forbid")

    files: list[FileChange] = Field(default_factory=list)

    @property
    def insertions(self) -> int:
        """Lines added, binary files not counted."""
        return sum(change.added or 0 for change in self.files)

    @property
    def deletions(self) -> int:
        """Lines deleted, binary files not counted."""
        return sum(change.deleted or 0 for change in self.files)

    def summary(self) -> str:
        """git's one-line summary: ``2 files changed, 5 insertions(+), 1 deletion(-)``."""
        if not self.files:
            return "no changes"

        def counted(number: int, word: str) -> str:
            return f"{number} {word}{'' if number == 1 else 's'}"

        parts = [f"{counted(len(self.files), 'file')} changed"]
        if self.insertions:
            parts.append(f"{counted(self.insertions, 'insertion')}(+)")
        if self.deletions:
            parts.append(f"{counted(self.deletions, 'deletion')}(-)")
        return ", ".join(parts)


def _count(text: str) -> int | None:
    return None if text == "-" else int(text)


def parse_numstat(output: str) -> DiffStat:
    """Parse ``git diff --numstat -z``: ``A\\tD\\tPATH\\0``, or for a rename
    ``A\\tD\\t\\0OLD\\0NEW\\0``."""
    fields = output.split("\0")
    files: list[FileChange] = []
    index = 0
    while index < len(fields) and fields[index]:
        added, deleted, path = fields[index].split("\t", 2)
        index += 1
        old_path = None
        if not path:
            old_path, path = fields[index], fields[index + 1]
            index += 2
        files.append(
            FileChange(path=path, added=_count(added), deleted=_count(deleted), old_path=old_path)
        )
    return DiffStat(files=files)


def parse_status_paths(output: str) -> list[str]:
    """Paths of ``git status --porcelain=v1 -z``: ``XY PATH\\0``, and for a rename or copy
    ``XY NEW\\0OLD\\0`` (both paths are listed)."""
    fields = output.split("\0")
    paths: list[str] = []
    index = 0
    while index < len(fields) and fields[index]:
        status, path = fields[index][:2], fields[index][3:]
        paths.append(path)
        index += 1
        if "R" in status or "C" in status:
            paths.append(fields[index])
            index += 1
    return paths
