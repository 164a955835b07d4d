"""The repo map: the tree with top-level definitions, fitted into a budget."""

from __future__ import annotations

from golem.context import build_repo_map, estimate_tokens
from golem.context.outline import outline
from tests.context.conftest import MakeRepo

MODULE = '''"""A module."""
import os


class Shape(Base, metaclass=Meta):
    """A shape."""

    def __init__(self, sides: int = 3) -> None:
        self.sides = sides

    async def area(self, *, scale: float) -> float:
        return 0.0

    def _private(self) -> None:
        pass


def build(name: str, /, *parts: str, strict: bool = False) -> Shape:
    return Shape()


def _helper() -> None:
    pass
'''


def test_the_map_gives_python_definitions_with_signatures(make_repo: MakeRepo) -> None:
    repo = make_repo({"pkg/shapes.py": MODULE, "README.md": "# x\n"})

    repo_map = build_repo_map(repo, budget_tokens=10_000)

    assert repo_map.text == (
        "```text\n"
        "2 files. Directories end with /; a file's definitions are indented under it.\n"
        "README.md\n"
        "pkg/\n"
        "  shapes.py\n"
        "    class Shape(Base, metaclass=Meta)\n"
        "      def __init__(self, sides: int=3) -> None\n"
        "      async def area(self, *, scale: float) -> float\n"
        "    def build(name: str, /, *parts: str, strict: bool=False) -> Shape\n"
        "```"
    )
    assert repo_map.fits
    assert repo_map.left_out == ()
    assert repo_map.tokens == estimate_tokens(repo_map.text)


def test_gitignored_vendored_and_generated_files_are_left_out(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            ".gitignore": "generated/\n*.log\n",
            "app.py": "def main() -> None: ...\n",
            "generated/out.py": "def junk() -> None: ...\n",
            "run.log": "noise\n",
            "node_modules/lib/index.js": "export function vendored() {}\n",
            "static/app.min.js": "function a(){}\n",
            "proto/msg_pb2.py": "class Msg: ...\n",
        }
    )
    (repo / "untracked.py").write_text("def fresh() -> None: ...\n")

    text = build_repo_map(repo, budget_tokens=10_000).text

    assert "app.py" in text
    assert "def fresh() -> None" in text  # not committed, but not ignored either
    for absent in ("generated", "run.log", "node_modules", "app.min.js", "msg_pb2", "junk"):
        assert absent not in text


def test_without_git_the_tree_is_walked_skipping_hidden_and_vendored_directories(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(
        {
            "main.go": "package main\n\nfunc main() {\n}\n",
            ".cache/x.py": "def hidden() -> None: ...\n",
            "venv/lib/y.py": "def vendored() -> None: ...\n",
        },
        use_git=False,
    )

    text = build_repo_map(repo, budget_tokens=10_000).text

    assert "main.go\n  func main()\n" in text
    assert "hidden" not in text
    assert "vendored" not in text


def test_other_languages_get_a_line_outline() -> None:
    ts = (
        "import x from 'y';\n"
        "export default class Store extends Base {\n"
        "  private items = [];\n"
        "  constructor(a: number) {\n"
        "    doThing(a);\n"
        "  }\n"
        "  async load<T>(key: string): Promise<T> {\n"
        "    if (key) {\n"
        "    }\n"
        "  }\n"
        "}\n"
        "export function helper(a: number): number {\n"
        "  return a;\n"
        "}\n"
        "export interface Item { id: string }\n"
    )
    rust = (
        "pub struct Point {\n    x: i32,\n}\n\n"
        "impl Point {\n    pub fn new() -> Self {\n        fn inner() {}\n"
        "        Point { x: 0 }\n    }\n}\n"
    )
    java = (
        "public class Account {\n    private int balance;\n"
        "    public Account(int balance) {\n        this.balance = balance;\n    }\n"
        "    public static int total(List<Account> all) {\n        return 0;\n    }\n"
        "    private void hidden() {}\n}\n"
    )

    assert [(d.signature, d.members) for d in outline("store.ts", ts)] == [
        (
            "export default class Store extends Base",
            ("constructor(a: number)", "async load<T>(key: string): Promise<T>"),
        ),
        ("export function helper(a: number): number", ()),
        ("export interface Item { id: string }", ()),
    ]
    assert [(d.signature, d.members) for d in outline("point.rs", rust)] == [
        ("pub struct Point", ()),
        ("impl Point", ("pub fn new() -> Self",)),
    ]
    assert [(d.signature, d.members) for d in outline("Account.java", java)] == [
        (
            "public class Account",
            ("public Account(int balance)", "public static int total(List<Account> all)"),
        )
    ]
    assert [
        d.signature for d in outline("main.go", "type T struct {\n}\nfunc (t *T) Go() {\n}\n")
    ] == [
        "type T struct",
        "func (t *T) Go()",
    ]


def test_python_that_does_not_parse_is_listed_without_definitions(make_repo: MakeRepo) -> None:
    repo = make_repo({"broken.py": "def (:\n", "ok.py": "def fine() -> None: ...\n"})

    text = build_repo_map(repo, budget_tokens=10_000).text

    assert "broken.py\nok.py\n  def fine() -> None\n" in text


def _big_repo() -> dict[str, str]:
    files: dict[str, str] = {}
    for package in range(6):
        for module in range(8):
            functions = "".join(
                f"def function_{n}(argument: int, other: str = 'x') -> int:\n    return 1\n\n"
                for n in range(12)
            )
            path = f"pkg{package}/sub{module % 2}/module_{module}.py"
            files[path] = f"class Thing{module}:\n    def method(self) -> None: ...\n\n{functions}"
    return files


def test_a_large_map_loses_detail_to_fit_and_says_what_was_left_out(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo(_big_repo())
    keep = "pkg5/sub1/module_7.py"
    full = build_repo_map(repo, budget_tokens=100_000)

    for budget in (4_000, 1_000, 500):
        repo_map = build_repo_map(repo, budget_tokens=budget, keep=[keep])

        assert repo_map.fits
        assert repo_map.tokens <= budget < full.tokens
        assert estimate_tokens(repo_map.text) == repo_map.tokens
        assert "def function_11(argument: int, other: str='x') -> int" in repo_map.text
        assert "  def method(self) -> None" in repo_map.text  # the kept file's class member
        assert any(item.startswith("repo map: definitions in ") for item in repo_map.left_out)

    small = build_repo_map(repo, budget_tokens=400, keep=[keep])
    assert small.left_out[0] == "repo map: definitions in 47 files"
    assert small.left_out[1].startswith("repo map: contents of 11 directories (pkg0/sub0/, ")
    assert "pkg0/\n  sub0/ (4 files)\n  sub1/ (4 files)\n" in small.text
    assert "pkg5/\n  sub0/ (4 files)\n  sub1/\n    module_1.py\n" in small.text


def test_files_outside_the_workdir_lose_detail_first(make_repo: MakeRepo) -> None:
    repo = make_repo(_big_repo())

    repo_map = build_repo_map(repo, budget_tokens=3_000, workdir="pkg2")

    assert repo_map.fits
    assert "pkg2/ (8 files)" not in repo_map.text
    assert "pkg2/\n  sub0/\n    module_0.py\n      class Thing0\n      def function_0(" in (
        repo_map.text
    )
    assert "pkg0/\n  sub0/\n    module_0.py\n    module_2.py\n" in repo_map.text


def test_a_budget_too_small_for_the_bare_tree_is_reported_as_not_fitting(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({f"file_{n}.txt": "x" for n in range(50)})

    repo_map = build_repo_map(repo, budget_tokens=50)

    assert not repo_map.fits
    assert repo_map.tokens > 50
    assert "file_49.txt" in repo_map.text  # files at the root are never collapsed


def test_the_map_is_the_same_for_the_same_repository(make_repo: MakeRepo) -> None:
    repo = make_repo(_big_repo())

    first = build_repo_map(repo, budget_tokens=1_500, mentions="fix function_3 in Thing4")

    assert build_repo_map(repo, budget_tokens=1_500, mentions="fix function_3 in Thing4") == first
