"""What golem prints on a terminal goes through one console, and only golem's own templates
are read as markup there.

A rich console reads any string it prints (a table's cells and titles too) as markup: a
branch named ``[red]x`` would be styled, ``[link=...]`` would become a hyperlink. On
golem's console a plain ``str`` is text, always: made plain by the one sanitiser
(``golem.core.ansi``) and shown as it is, never styled. Markup is a ``Markup``, which only
``markup(template, *values)`` makes: the template is a literal of golem's source (the
layering test's guard fails on any other first argument), and every value it takes is
formatted, made plain and escaped, so nothing it interpolates can open a tag; a value in a
style of golem's choice is ``styled(value, style)``. Whatever else
reaches the terminal (a ``Text`` made in code, a table) is cleaned segment by segment as it
is rendered: no escape sequence, control or invisible character gets out but the styles
rich itself writes.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from typing import IO, Any, LiteralString

from rich.console import (
    Console,
    ConsoleOptions,
    HighlighterType,
    JustifyMethod,
    OverflowMethod,
    RenderableType,
)
from rich.markup import escape
from rich.segment import Segment
from rich.status import Status
from rich.style import Style
from rich.text import Text

from golem.core.ansi import clean

__all__ = [
    "GolemConsole",
    "Markup",
    "RenderableType",
    "markup",
    "say",
    "say_json",
    "styled",
    "terminal",
]


class Markup(str):
    """Markup golem wrote, with every value in it escaped: made by ``markup`` only."""

    __slots__ = ()


class _Escaping(string.Formatter):
    """``str.format`` whose every field comes out plain and with its markup escaped."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return escape(clean(super().format_field(value, format_spec)))


_ESCAPING = _Escaping()


def markup(template: LiteralString, /, *values: object, **named: object) -> Markup:
    """``template`` (golem's markup, a literal) with ``values`` in its ``{}`` fields as
    text: whatever a value holds, it shows as itself, never as a style or a link."""
    return Markup(_ESCAPING.vformat(template, values, named))


def styled(value: object, style: str) -> Text:
    """``value`` as text in ``style`` (golem's choice of colour for it): cleaned before rich
    sees it, which would drop a bell and leave an escape sequence's payload behind."""
    return Text(clean(str(value)), style=style)


class GolemConsole(Console):
    """A rich console on which a ``str`` is text and only a ``Markup`` is markup, and
    whose output holds no escape sequence or control character it did not write itself."""

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: HighlighterType | None = None,
    ) -> Text:
        is_markup = isinstance(text, Markup)
        return super().render_str(
            text if is_markup else clean(text),
            style=style,
            justify=justify,
            overflow=overflow,
            emoji=False,
            markup=is_markup,
            highlight=highlight,
            highlighter=highlighter,
        )

    def status(self, status: RenderableType, **options: Any) -> Status:
        """A spinner with ``status`` beside it (a ``str`` as text, as everywhere here)."""
        if isinstance(status, str) and not isinstance(status, Markup):
            status = Text(clean(status))
        return super().status(status, **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text == clean(segment.text):
                yield segment
            else:
                yield Segment(clean(segment.text), segment.style)


def terminal(
    *,
    stderr: bool = False,
    soft_wrap: bool = False,
    highlight: bool = True,
    file: IO[str] | None = None,
) -> GolemConsole:
    """The console a command prints on (its standard error with ``stderr``; a long line
    kept whole with ``soft_wrap``)."""
    return GolemConsole(stderr=stderr, soft_wrap=soft_wrap, highlight=highlight, file=file)


def say_json(value: Any, *, indent: int | None = 2) -> None:
    """``value`` (pydantic models, and data holding them) as JSON on standard output, every
    character outside ASCII escaped: a C1 control or a bidi override a stored record holds
    reaches no terminal raw, and a JSON reader sees the same text (``indent`` None: one
    line)."""
    import json  # noqa: PLC0415 - the JSON commands' only
    import sys  # noqa: PLC0415

    from pydantic_core import to_jsonable_python  # noqa: PLC0415

    sys.stdout.write(json.dumps(to_jsonable_python(value), indent=indent) + "\n")


def say(*objects: RenderableType, stderr: bool = False) -> None:
    """A line of ``objects`` as ``typer.echo`` would write it (not wrapped, not
    highlighted), through golem's console."""
    terminal(stderr=stderr, soft_wrap=True, highlight=False).print(*objects)
