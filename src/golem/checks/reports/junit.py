"""JUnit XML reports (pytest's ``--junitxml``, jest-junit, vitest's, gradle's, go-junit-
report's): each ``testcase`` with a ``failure`` or ``error`` child. The XML came from the
box: a document with a DOCTYPE (entities) or over ``MAX_XML`` characters is not read. A
``testcase`` with none of ``failure``, ``error`` or ``skipped`` passed."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from xml.etree import ElementTree

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import first_lines, merge

__all__ = ["MAX_XML", "junit_failures", "junit_passes", "junit_paths", "named_reports"]

MAX_XML = 8 * 1024 * 1024
MESSAGE_CHARS = 800
_NAMES = (
    "junit*.xml",
    "TEST-*.xml",
    "*-results.xml",
    "*_results.xml",
    "*.junit.xml",
    "test-results/*.xml",
    "test-reports/*.xml",
    "surefire-reports/*.xml",
)
_NAMED = re.compile(r"--junit-?xml(?:=|\s+)['\"]?([^\s'\";&|]+)")
_DOCTYPE = re.compile(r"<!DOCTYPE|<!ENTITY", re.IGNORECASE)


def junit_failures(documents: Sequence[str]) -> list[TestFailure]:
    """The failing test cases of the documents that can be read safely (others are
    skipped: the check's output still tells)."""
    failures: list[TestFailure] = []
    for root in _readable(documents):
        failures.extend(_failure(case) for case in _failed_cases(root))
    return merge(failures)


def junit_passes(documents: Sequence[str]) -> list[str]:
    """The test cases that passed, named as ``junit_failures`` names failures."""
    passed = [
        _case_name(case)
        for root in _readable(documents)
        for case in root.iter("testcase")
        if all(case.find(child) is None for child in ("failure", "error", "skipped"))
    ]
    return list(dict.fromkeys(passed))


def _readable(documents: Sequence[str]) -> Iterable[ElementTree.Element]:
    for document in documents:
        if len(document) > MAX_XML or _DOCTYPE.search(document):
            continue
        try:
            yield ElementTree.fromstring(document)  # noqa: S314 - no DOCTYPE, so no entities
        except ElementTree.ParseError:
            continue


def junit_paths(paths: Iterable[str], command: str = "") -> list[str]:
    """Of the paths a check wrote, those named like JUnit reports or named as one by
    ``command`` (``--junitxml=PATH``, ``--junit-xml PATH``)."""
    named = named_reports(command)
    return [
        path
        for path in paths
        if (path.endswith(".xml") and _named_like_a_report(path))
        or any(path == name or path.endswith(f"/{name}") for name in named if name)
    ]


def named_reports(command: str) -> list[str]:
    """The JUnit reports ``command`` names (``--junitxml=PATH``), relative to where it runs."""
    return [name for name in (found.lstrip("./") for found in _NAMED.findall(command)) if name]


def _named_like_a_report(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    parent = "/".join(path.split("/")[-2:])
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(parent, p) for p in _NAMES) or (
        "/test-results/" in f"/{path}"
    )


def _failed_cases(root: ElementTree.Element) -> Iterable[ElementTree.Element]:
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            yield case


def _case_name(case: ElementTree.Element) -> str:
    name, classname = case.get("name", "?"), case.get("classname", "")
    return f"{classname}.{name}" if classname and not name.startswith(classname) else name


def _failure(case: ElementTree.Element) -> TestFailure:
    problem = case.find("failure")
    if problem is None:
        problem = case.find("error")
    assert problem is not None  # only failed cases come here
    name = _case_name(case)
    # the message attribute is the assertion; the text, when alone, the whole trace
    message = problem.get("message", "").strip() or (problem.text or "").strip()
    line = case.get("line")
    return TestFailure(
        name=name,
        message=first_lines(message, MESSAGE_CHARS),
        file=case.get("file"),
        line=int(line) if line and line.isdigit() else None,
    )
