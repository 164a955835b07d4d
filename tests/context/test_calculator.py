"""The project's sample repository, examples/calculator, through the context layer."""

from __future__ import annotations

import shutil
from pathlib import Path

from golem.checks import RepoConventions, load_conventions
from golem.context import hydrate
from golem.forge import Issue

CALCULATOR = Path(__file__).resolve().parents[2] / "examples" / "calculator"
ISSUE = Issue(
    title="add subtracts",
    body="`add(2, 3)` gives -1; see calculator.py:6. The test:\n\n"
    '  File "test_calculator.py", line 10, in test_add\n',
    number=1,
)


def _copy(tmp_path: Path) -> Path:
    """The sample's own files, without a .golem.toml (it may or may not have one)."""
    copy = tmp_path / "calculator"
    names = ("AGENTS.md", "README.md", "calculator.py", "test_calculator.py")
    copy.mkdir()
    for name in names:
        shutil.copy(CALCULATOR / name, copy / name)
    return copy


def test_the_sample_repository_hydrates_with_its_rules_the_named_files_and_a_map() -> None:
    context = hydrate(CALCULATOR, task="Fix add.", issue=ISSUE, budget_tokens=4_000)

    assert [(section.kind, section.title) for section in context.sections] == [
        ("rules", "AGENTS.md"),
        ("issue", "add subtracts"),
        ("files", "calculator.py (line 6)"),
        ("files", "test_calculator.py (line 10)"),
        ("repo_map", "tree and definitions"),
    ]
    assert context.dropped == []
    assert "Run `python3 -m unittest -v` before you finish" in context.sections[0].text
    assert "     6\t    return a - b" in context.sections[2].text
    repo_map = context.sections[-1].text
    assert "calculator.py\n  def add(a: float, b: float) -> float\n" in repo_map
    assert "  class CalculatorTest(unittest.TestCase)\n    def test_add(self) -> None\n" in repo_map
    assert context == hydrate(CALCULATOR, task="Fix add.", issue=ISSUE, budget_tokens=4_000)


def test_the_sample_repository_without_a_golem_toml_runs_unittest_discovery(
    tmp_path: Path,
) -> None:
    conventions = load_conventions(_copy(tmp_path))

    assert (conventions.install, conventions.test) == ([], ["python3 -m unittest discover"])
    assert conventions.ecosystems == ["python"]
    assert conventions.source == "detected: ecosystem default (test)"


def test_the_sample_repository_with_a_golem_toml_runs_unittest(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / ".golem.toml").write_text('[commands]\ntest = "python3 -m unittest -v"\n')

    conventions = load_conventions(copy)

    assert conventions == RepoConventions(
        test=["python3 -m unittest -v"],
        ecosystems=["python"],
        findings=conventions.findings,
        source="from .golem.toml",
    )


def test_the_sample_repositorys_conventions_load() -> None:
    conventions = load_conventions(CALCULATOR)

    assert conventions.setup == conventions.lint == conventions.build == []
    assert conventions.test in ([], ["python3 -m unittest -v"])
