"""Nothing golem did not write is read as markup or reaches a terminal as a control: the
rules ``golem.core.console`` relies on, read from every module under src/golem.

The console is ``golem.core.console``'s (``terminal()``): on it a ``str`` is text and only
a ``Markup`` is markup, which only ``markup(template, *values)`` makes, from a template
that is a literal of golem's source with no field inside a tag; a value in a style of
golem's choice is ``styled(value, style)``. So no module but that one makes a rich
console, parses markup or ANSI itself (``Text.from_markup``, ``Text.from_ansi``,
``rich.markup``, a ``Spinner``'s or a ``Progress`` column's text, a ``Panel``'s title
but a literal or ``styled()``), makes a ``Markup`` or a ``Text`` of a value. Lines written past the
console (``typer.echo``, ``print``, a standard stream's ``write``) take no formatted
string and no JSON: text with a value in it goes through the console, JSON through
``say_json`` (every character outside ASCII escaped). And golem's markup written
anywhere but in ``markup()`` would be shown as text: that fails too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import golem

PACKAGE = Path(golem.__file__).parent
CONSOLE_MODULE = PACKAGE / "core" / "console.py"
SUPERVISOR = PACKAGE / "sandbox" / "supervisor" / "box"
"""The in-box supervisor runs in the box, on no terminal of the user's."""
RICH_MODULES = {"rich.table", "rich.text", "rich.panel", "rich.box"}
"""What a module may take of rich: renderables the console cleans as it prints them."""
READS_MARKUP = {"from_markup", "from_ansi", "Spinner", "Progress", "TextColumn", "Status"}
STYLE_TAG = re.compile(
    r"\[/?(?:bold|dim|italic|underline|reverse|strike|link|red|green|yellow|blue|magenta|cyan|"
    r"white|grey\d*|b|i|u|s)\b[^\]\[]*\]|\[/\]"
)
"""Markup of golem's own as it is written: shown as text unless it is in ``markup()``."""
TAG_WITH_FIELD = re.compile(r"\[[^\]\[]*\{")
"""A ``{}`` field inside a tag: ``[{}]`` lets the value pick a style or a link."""


def sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != CONSOLE_MODULE and SUPERVISOR not in path.parents:
            yield path, ast.parse(path.read_text(), filename=str(path))


def where(path: Path, node: ast.AST) -> str:
    shown = path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE.parent) else path
    return f"{shown}:{getattr(node, 'lineno', 0)}"


def called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def writes_past_the_console(call: ast.Call) -> bool:
    """``typer.echo``/``click.echo``, ``sys.stdout.write``/``sys.stderr.write``, or the
    builtin ``print``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "print"
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name | ast.Attribute):
        return False
    owner = func.value.id if isinstance(func.value, ast.Name) else func.value.attr
    if func.attr in {"echo", "secho"}:
        return owner in {"typer", "click"}
    return func.attr == "write" and owner in {"stdout", "stderr"}


def formatted(node: ast.expr) -> bool:
    """Whether ``node`` makes a string with values in it (an f-string, ``%``, ``+``,
    ``.format``)."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        return True
    return isinstance(node, ast.Call) and called_name(node) == "format"


def dumped(node: ast.expr) -> bool:
    """Whether ``node`` makes JSON text (``json.dumps``, a model's ``model_dump_json``)."""
    return isinstance(node, ast.Call) and called_name(node) in {"dumps", "model_dump_json"}


def literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def import_breach(node: ast.AST) -> str | None:
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rich"):
        return None if node.module in RICH_MODULES else f"imports {node.module}"
    if isinstance(node, ast.Import):
        taken = [alias.name for alias in node.names if alias.name.startswith("rich")]
        return f"imports {taken[0]}" if taken else None
    return None


def call_breaches(call: ast.Call) -> Iterator[str]:
    name = called_name(call)
    template = literal(call.args[0]) if call.args else None
    if name in READS_MARKUP:
        yield f"calls {name}, which reads markup"
    elif name in {"Text", "assemble"} and call.args and literal(call.args[0]) is None:
        yield "makes a Text of a value (rich drops a bell of it first): use styled()"
    elif name == "Markup":
        yield "makes a Markup of its own"
    elif name == "markup" and template is None:
        yield "gives markup() a template that is not a literal"
    elif name == "markup" and template is not None and TAG_WITH_FIELD.search(template):
        yield "puts a value inside a markup tag (a value could choose a style or a link)"
    elif writes_past_the_console(call) and any(formatted(arg) for arg in call.args):
        yield "writes a formatted string past the console"
    elif writes_past_the_console(call) and any(dumped(arg) for arg in call.args):
        yield "writes JSON past say_json() (a C1 control or a bidi override in it raw)"
    for keyword in call.keywords:
        if keyword.arg == "markup" and not (
            isinstance(keyword.value, ast.Constant) and keyword.value.value is False
        ):
            yield "turns markup on"
        elif (
            name == "Panel"
            and keyword.arg in {"title", "subtitle"}
            and literal(keyword.value) is None
            and not (isinstance(keyword.value, ast.Call) and called_name(keyword.value) == "styled")
        ):
            yield f"gives a Panel a {keyword.arg} (read as markup) but a literal or styled()"


def templates(tree: ast.Module) -> set[int]:
    """The ids of the literals that are ``markup()``'s templates."""
    return {
        id(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and called_name(node) == "markup" and node.args
    }


def breaches(path: Path, tree: ast.Module) -> Iterator[str]:
    markup_templates = templates(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in markup_templates
            and STYLE_TAG.search(node.value)
        ):
            yield f"{where(path, node)} writes markup outside markup(), shown as text"
        found = import_breach(node)
        if found is not None:
            yield f"{where(path, node)} {found}"
        elif isinstance(node, ast.Call):
            for breach in call_breaches(node):
                yield f"{where(path, node)} {breach}"


def test_no_module_but_golems_console_reads_markup_or_writes_a_formatted_line() -> None:
    """Each line found names the module and the rule: print through
    ``golem.core.console.console()`` and make markup with ``markup("literal {}", value)``."""
    found = [breach for path, tree in sources() for breach in breaches(path, tree)]
    assert found == []


def test_the_guard_finds_each_way_of_printing_a_value_as_markup(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from rich.console import Console\n"
        "from rich.markup import escape\n"
        "import rich.progress\n"
        "Text.from_markup(x)\n"
        "Text.from_ansi(x)\n"
        "markup(f'[red]{x}')\n"
        "markup(template)\n"
        "Markup(x)\n"
        "typer.echo(f'removed {x}')\n"
        "sys.stderr.write('golem: ' + x)\n"
        "out.print(x, markup=True)\n"
        "sys.stdout.write('{}'.format(x))\n"
        "out.print(f'[bold]{x}[/]')\n"
        "table.add_row('[dim]-[/dim]')\n"
        "state = 'live' if alive else '[yellow]orphan[/]'\n"
        "markup('[{}]x[/]', colour)\n"
        "Panel(body, title=name)\n"
        "Text(name, style='red')\n"
        "Text.assemble(('golem: ', 'red'), message)\n"
        "typer.echo(json.dumps(x))\n"
        "typer.echo(state.model_dump_json(indent=2))\n"
    )
    good = (
        "markup('[red]{}[/]', x)\nout.print(x)\nsay_json(x)\nfile.write(json.dumps(x))\n"
        "out.print(x, markup=False)\nout.print(f'removed {x}')\nfile.write(f'{x}')\n"
        "Panel(body, title=styled(name, ''))\nText('✓', style='green')\n"
    )
    found = list(breaches(bad, ast.parse(bad.read_text())))
    assert len(found) == 23, found  # an f-string with two tags is two
    assert list(breaches(bad, ast.parse(good))) == []
