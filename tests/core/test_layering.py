"""golem's layers import only downwards, and across layers only through a layer's public
names (its package), as AGENTS.md draws them.

Every ``import`` of every module under src/golem is read (inside functions and
``TYPE_CHECKING`` blocks too: a late import is still a dependency). ``golem.core`` is the
exception to the second rule: it is a set of modules by concept (config, errors, events),
imported by name so that a light command does not load them all.

The deep imports that exist today are listed in ``deep_imports.txt`` beside this file: a
new one fails (export the name from the layer's package instead), and so does a listed one
that is gone (take it off the list, so the list only shrinks).

Inside a layer, modules import one another without a cycle: each cycle is a set of modules
that can only be read, tested and loaded together. ``from package import module`` is an
import of the module (Python runs the package's ``__init__`` for any of its modules).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import golem
from golem import core

PACKAGE = Path(golem.__file__).parent
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("sandbox",),
    ("store", "agent"),
    ("forge",),
    ("context",),
    ("checks",),
    ("blueprint",),
    ("service",),
    ("cluster",),
    ("eval",),
    ("cli", "testing"),
)
"""Lowest first; the layers of one rank import neither each other."""
RANK = {layer: rank for rank, layers in enumerate(LAYERS) for layer in layers}
OPEN_LAYERS = frozenset({"core"})
"""Layers whose modules others import by name."""
BASELINE = Path(__file__).with_name("deep_imports.txt")
TESTS = Path(__file__).parents[1]


def modules() -> dict[str, Path]:
    """Every module under src/golem, by its dotted name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(*, submodules: bool = False) -> Iterator[tuple[str, str]]:
    """(importing module, imported golem module) for every import under src/golem; with
    ``submodules``, ``from package import module`` names the module (and the package only
    when it also takes a name the package defines)."""
    known = modules()
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
                if submodules:
                    named = [f"{node.module}.{alias.name}" for alias in node.names]
                    taken = [name for name in named if name in known]
                    # ``from package import module`` takes nothing the package defines
                    names = taken if len(taken) == len(named) else names + taken
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            yield from ((module, name) for name in names if name.startswith("golem."))


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def crossings() -> Iterator[tuple[str, str, str, str]]:
    """(importer, imported, importer's layer, imported's layer) across two layers."""
    for importer, imported in imports():
        here, there = layer_of(importer), layer_of(imported)
        if here is not None and there is not None and here != there:
            yield importer, imported, here, there


def test_the_layers_in_this_test_are_every_package_of_golem() -> None:
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert packages == set(RANK)


def test_every_import_goes_down_the_layers() -> None:
    upward = [
        f"{importer} imports {imported} ({here} is below or beside {there})"
        for importer, imported, here, there in crossings()
        if RANK[there] >= RANK[here]
    ]
    assert upward == []


def test_no_new_deep_import_across_layers() -> None:
    found = {
        f"{importer} -> {imported}"
        for importer, imported, _here, there in crossings()
        if there not in OPEN_LAYERS and imported != f"golem.{there}"
    }
    listed = {
        line.strip()
        for line in BASELINE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert sorted(found - listed) == [], "import these from the layer's package instead"
    assert sorted(listed - found) == [], f"gone: take them off {BASELINE.name}"


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan's
    algorithm, iterative): each a set of modules that import one another in a ring."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    ring = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(ring) > 1:
                        found.append(sorted(ring))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in stack:
                low[node] = min(low[node], index[step])
    return found


def layer_graph() -> dict[str, set[str]]:
    """Each module's imports of other modules of its own layer."""
    graph: dict[str, set[str]] = {module: set() for module in modules()}
    for importer, imported in imports(submodules=True):
        same_layer = layer_of(importer) == layer_of(imported)
        if imported in graph and imported != importer and same_layer:
            graph[importer].add(imported)
    return graph


def test_the_cycle_finder_finds_a_ring_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_inside_a_layer() -> None:
    found = [" ".join(ring) for ring in cycles(layer_graph())]
    assert found == [], "break the cycle: a module per concept, one way"


def test_golem_cores_names_are_each_found_in_the_module_it_names() -> None:
    """golem.core loads its names on first use from a table: every name it exports is in
    the table, and the module the table names holds it."""
    assert sorted(core._HOMES) == sorted(core.__all__)
    for name in core.__all__:
        assert getattr(core, name) is not None, name


def imported_test_modules(path: Path, package: str) -> set[str]:
    """The test modules (``test_*``) that the file at ``path``, a module of ``package``,
    imports, however it is written: ``import``, ``from ... import``, relative, a module
    taken by ``from package import test_x``, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            named = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in named:
            parts = name.split(".")
            tests = [at for at, part in enumerate(parts) if part.startswith("test_")]
            if tests:
                found.add(".".join(parts[: tests[0] + 1]))
    return found


def test_no_test_file_imports_a_test_module() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)} imports {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for name in sorted(
            imported_test_modules(path, ".".join(path.relative_to(TESTS.parent).parent.parts))
        )
    ]
    assert found == [], "move what they share to a helper module of their area or a conftest.py"


def test_the_finder_sees_every_way_of_importing_a_test_module(tmp_path: Path) -> None:
    written = tmp_path / "test_importer.py"
    written.write_text(
        "import tests.a.test_b\n"
        "from tests.a.test_c import helper\n"
        "from tests.a import test_d, kit\n"
        "from .test_e import helper\n"
        "from . import test_f\n"
        "from ..b.test_h import helper\n"
        "def later():\n    from tests.a.test_g import helper\n"
        "from tests.a.kit import helper\n"
        "import tests.a.kit\n"
    )
    assert sorted(imported_test_modules(written, "tests.a")) == [
        "tests.a.test_b",
        "tests.a.test_c",
        "tests.a.test_d",
        "tests.a.test_e",
        "tests.a.test_f",
        "tests.a.test_g",
        "tests.b.test_h",
    ]
