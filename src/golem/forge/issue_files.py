"""Issues written as local files: markdown (the first ``# heading`` is the title), or YAML
and JSON with ``title``, ``body``, ``comments`` and ``labels``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from golem.core.errors import IssueNotReadable
from golem.core.yaml_text import load_yaml
from golem.forge.contracts import Issue, IssueComment

__all__ = ["MAX_ISSUE_BYTES", "parse_markdown_issue", "read_issue_file"]

MAX_ISSUE_BYTES = 1024 * 1024
MARKDOWN = frozenset({".md", ".markdown"})
STRUCTURED = frozenset({".yaml", ".yml", ".json"})
HEADING = re.compile(r"^#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^[ ]{0,3}(```|~~~)")


class IssueFile(BaseModel):
    """The fields a YAML or JSON issue file may have."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1)
    body: str = ""
    comments: list[str | IssueComment] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    url: str | None = None
    number: int | None = None
    repo: str | None = None


def read_issue_file(path: Path) -> Issue:
    """The issue ``path`` states; ``IssueNotReadable`` says what is wrong with it."""
    suffix = path.suffix.lower()
    if suffix not in MARKDOWN | STRUCTURED:
        raise IssueNotReadable(
            f"{path}: golem reads issues from .md, .yaml, .yml or .json files; write the "
            "issue as markdown with a '# Title' line, or as YAML with title and body"
        )
    text = _read(path)
    url = path.resolve().as_uri()
    if suffix in MARKDOWN:
        title, body = parse_markdown_issue(text, path)
        return Issue(title=title, body=body, url=url)
    data = _load_structured(text, path, suffix)
    try:
        fields = IssueFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'the file'}: {error['msg']}"
            for error in exc.errors()
        )
        raise IssueNotReadable(
            f"{path}: {problems} (an issue file has title, and may have body, comments, "
            "labels, url, number and repo)"
        ) from exc
    comments = [c if isinstance(c, IssueComment) else IssueComment(body=c) for c in fields.comments]
    return Issue(
        title=fields.title.strip(),
        body=fields.body.strip(),
        comments=comments,
        labels=fields.labels,
        url=fields.url or url,
        number=fields.number,
        repo=fields.repo,
    )


def parse_markdown_issue(text: str, path: Path | str = "the issue") -> tuple[str, str]:
    """The title (the first ``# heading`` outside code blocks) and the body (the rest)."""
    lines = text.splitlines()
    fenced = False
    for index, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := HEADING.match(line)):
            body = "\n".join(lines[:index] + lines[index + 1 :]).strip()
            return heading[1].strip(), body
    raise IssueNotReadable(
        f"{path} has no '# Title' line: start the markdown issue with one, the body after it"
    )


def _read(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_ISSUE_BYTES:
            raise IssueNotReadable(
                f"{path} is {size} bytes; an issue file may have at most {MAX_ISSUE_BYTES}: "
                "shorten it, or link the long parts"
            )
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise IssueNotReadable(f"{path} does not exist: check the issue file's path") from exc
    except IsADirectoryError as exc:
        raise IssueNotReadable(f"{path} is a directory: name the issue file in it") from exc
    except UnicodeDecodeError as exc:
        raise IssueNotReadable(f"{path} is not UTF-8 text: save it as UTF-8") from exc
    except OSError as exc:
        raise IssueNotReadable(f"cannot read {path} ({exc.strerror}): check it") from exc


def _load_structured(text: str, path: Path, suffix: str) -> Any:
    try:
        data = json.loads(text) if suffix == ".json" else load_yaml(text)
    except json.JSONDecodeError as exc:
        raise IssueNotReadable(
            f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); fix it"
        ) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise IssueNotReadable(f"{path}{where}: {problem}; fix the YAML") from exc
    if not isinstance(data, dict):
        raise IssueNotReadable(
            f"{path} holds {type(data).__name__}, not a mapping: write 'title: ...' and "
            "'body: ...' at the top level"
        )
    return data
