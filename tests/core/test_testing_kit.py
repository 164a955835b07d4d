"""golem.testing: the fakes ship with golem, work without golem's test suite or pytest, and
docs/testing.md's example runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import golem
from golem.core.events import Event
from golem.testing import EventCapture

KIT = Path(golem.__file__).parent / "testing"
DOC = Path(__file__).parents[2] / "docs" / "testing.md"


def test_every_module_imports_in_a_bare_interpreter_without_pytest_or_the_suite(
    tmp_path: Path,
) -> None:
    modules = sorted(f"golem.testing.{p.stem}" for p in KIT.glob("*.py") if p.stem != "__init__")
    assert "golem.testing.github_server" in modules
    probe = (
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "leaked = sorted(m for m in sys.modules if m == 'pytest' or m.split('.')[0] == 'tests')\n"
        "print(leaked)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(KIT.parents[1])}  # src only: no tests package
    done = subprocess.run(
        [sys.executable, "-c", probe],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_docs_example_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    [example] = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    monkeypatch.delenv("DEMO_GITHUB_TOKEN", raising=False)
    exec(compile(example, str(DOC), "exec"), {})  # noqa: S102 - the doc's own code


class Said(Event):
    text: str


class Shouted(Said):
    pass


def test_an_event_capture_keeps_events_in_order_and_picks_them_by_type() -> None:
    capture = EventCapture[Said]()
    for event in (Said(text="a"), Shouted(text="B"), Said(text="c")):
        capture(event)
    assert [e.text for e in capture] == ["a", "B", "c"]
    assert [e.text for e in capture.of_type(Shouted)] == ["B"]
    assert bool(EventCapture[Said]())  # an empty sink is still a sink where code asks
    capture.clear()
    assert capture.events == []
