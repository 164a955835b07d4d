"""``go test``'s output: ``--- FAIL: TestX (0.00s)`` per failing test (subtests indented,
``TestX/case``), its ``file_test.go:12: message`` lines (after the FAIL line, or before it
with ``-v``), panics, and ``FAIL <package>`` lines, ``[build failed]`` for a package that
did not compile. Also gotestsum's ``=== FAIL: package TestX`` recap, and ``go test -json``
(its output events, put back together per package). With ``-v`` (or ``GOFLAGS=-v``), a
``--- PASS: TestX`` line names each test that passed."""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field

from golem.checks.contracts import TestFailure
from golem.checks.reports.format import Format, first_lines

__all__ = ["GO_TEST"]

_RESULT = re.compile(r"^[ \t]*--- (FAIL|PASS|SKIP): (\S+) \([\d.]+s\)$")
_RUNNING = re.compile(r"^=== (?:RUN|CONT|PAUSE|NAME)[ \t]+(\S+)$")
_LOG = re.compile(r"^([ \t]+)(\S+\.go):(\d+): ")
_GOTESTSUM = re.compile(r"^=== FAIL: (\S+) (\S+) \([\d.]+s\)$")
_JSON = re.compile(r'^\{"Time":"[^"\n]*","Action":"', re.M)
_FRAME = re.compile(r"^\t(\S+_test\.go):(\d+)")
_PACKAGE = re.compile(r"^(?:FAIL|ok)[ \t]+(\S+)(?:[ \t]+[\d.]+s|[ \t]+\[(build|setup) failed\])?$")
MESSAGE_CHARS = 800


@dataclass
class _Test:
    name: str
    failed: bool = False
    passed: bool = False
    lines: list[str] = field(default_factory=list)
    file: str | None = None
    line: int | None = None
    package: str | None = None


def recognises(text: str) -> bool:
    """A ``--- FAIL:`` line, or a package's ``ok``/``FAIL`` line with its time."""
    return bool(
        _JSON.search(text)
        or re.search(r"^[ \t]*--- FAIL: \S+ \(|^=== FAIL: \S+ \S+ \(", text, re.M)
        or re.search(r"^(?:FAIL|ok)[ \t]+\S+[ \t]+(?:[\d.]+s|\[build failed\])$", text, re.M)
    )


def parse(text: str) -> list[TestFailure]:
    """The failing tests (a parent only when it failed on its own), named
    ``package.TestX/case``, and the packages that did not build."""
    if _JSON.search(text):
        text = _from_json(text)
    order = _tests(text)
    parents = {test.name.rsplit("/", 1)[0] for test in order if test.failed and "/" in test.name}
    failures = [
        _failure(test)
        for test in order
        if test.failed and (test.lines or test.name not in parents)  # not only its subtests
    ]
    return failures + _build_failures(text)


def passes(text: str) -> list[str]:
    """The tests a ``--- PASS:`` line names (and no line says failed), named as failures
    are: ``package.TestX/case``."""
    if _JSON.search(text):
        text = _from_json(text)
    return [_named(test) for test in _tests(text) if test.passed and not test.failed]


def _tests(text: str) -> list[_Test]:
    """Every test the output tells of, in order, with what its lines say (its package from
    the package's ``ok``/``FAIL`` line after them)."""
    tests: dict[str, _Test] = {}  # this package's
    order: list[_Test] = []
    current: _Test | None = None
    log_indent = -1
    for line in text.split("\n"):
        if heading := _heading(line):
            name, package, result = heading
            if name not in tests:
                tests[name] = _Test(name, package=package)
                order.append(tests[name])
            current = tests[name]
            current.failed = current.failed or result == "FAIL"
            current.passed = current.passed or result == "PASS"
            log_indent = -1
        elif ended := _PACKAGE.match(line):
            _end_package(order, ended.group(1))
            tests, current = {}, None
        elif current is not None:
            log_indent = _take_log(current, line, log_indent)
    return order


def _heading(line: str) -> tuple[str, str | None, str | None] | None:
    """A line that begins a test's lines: its name, its package (when the line says) and
    the result it says (FAIL, PASS, SKIP; None: none yet)."""
    if result := _RESULT.match(line):
        return result.group(2), None, result.group(1)
    if running := _RUNNING.match(line):
        return running.group(1), None, None
    if recap := _GOTESTSUM.match(line):
        return recap.group(2), recap.group(1), "FAIL"
    return None


def _take_log(test: _Test, line: str, log_indent: int) -> int:
    """Keep a line a test logged (or its continuation, or a panic); the log's indent."""
    if log := _LOG.match(line):
        test.lines.append(line.strip())
        if test.file is None:
            test.file, test.line = log.group(2), int(log.group(3))
        return len(log.group(1))
    if log_indent >= 0 and line.startswith(" " * (log_indent + 1)):
        test.lines.append(line[log_indent:])
        return log_indent
    if line.startswith("panic: "):
        test.lines.append(line)
        test.failed = True
    elif (frame := _FRAME.match(line)) and test.file is None and test.lines:
        test.file, test.line = frame.group(1), int(frame.group(2))
    return -1


def _from_json(text: str) -> str:
    """``go test -json``'s output events as the plain output, package by package."""
    by_package: dict[str, list[str]] = {}
    for line in text.split("\n"):
        if not line.startswith('{"Time":'):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("Action") == "output":
            output = event.get("Output")
            if isinstance(output, str):
                by_package.setdefault(str(event.get("Package", "")), []).append(output)
    return "".join("".join(outputs) for outputs in by_package.values())


def _end_package(order: list[_Test], package: str) -> None:
    for test in order:
        test.package = test.package or package


def _named(test: _Test) -> str:
    return f"{test.package}.{test.name}" if test.package else test.name


def _failure(test: _Test) -> TestFailure:
    name = _named(test)
    message = first_lines(textwrap.dedent("\n".join(test.lines)), MESSAGE_CHARS)
    return TestFailure(name=name, message=message, file=test.file, line=test.line)


def _build_failures(text: str) -> list[TestFailure]:
    failures = []
    for match in re.finditer(r"^FAIL[ \t]+(\S+) \[(?:build|setup) failed\]$", text, re.M):
        package = match.group(1)
        errors = re.search(rf"^# {re.escape(package)}\b.*\n((?:(?!#|FAIL).*\n)*)", text, re.M)
        message = first_lines(errors.group(1) if errors else "build failed", MESSAGE_CHARS)
        failures.append(TestFailure(name=package, message=message))
    return failures


GO_TEST = Format(
    name="go test",
    hints=("go test", "gotestsum"),
    recognises=recognises,
    parse=parse,
    passes=passes,
)
