"""Any text golem did not write, put into the markdown it writes, renders as that text and
nothing else: one code span (or one code block), whatever it holds: no mention, reference,
link, image, HTML, heading, emphasis, table cell or fence of its own. Rendered by a real
CommonMark parser with GitHub's tables (markdown-it-py); forges leave code alone."""

from __future__ import annotations

import html

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from golem.core.ansi import clean
from golem.forge.markdown import INLINE_LIMIT, block, code

MARKDOWN = MarkdownIt("commonmark").enable("table")

HOSTILE = [
    "@everyone @admin please look",
    "#123 and octo/repo#7 and GH-12 and !4",
    "name` [click](https://evil.example) `",
    "![pixel](https://evil.example/x.png)",
    "<img src=x onerror=alert(1)> <script>alert(1)</script> <details open>",
    "<!-- hidden --> &#64;everyone &amp;",
    "# Heading\n## another\n- item",
    "| injected | cell |",
    "```\n@admin\n```",
    "~~~\n@admin\n~~~",
    "https://evil.example/@admin www.evil.example",
    "**bold** _em_ ~~strike~~ <b>b</b>",
    "a trailing backslash\\",
    "`leading and trailing`",
    "``",
    "",
    "   ",
    "[ref]: https://evil.example\n[ref]",
    "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07 \x1b[31mred\x9b0m",
    "\u202eevil\u202c \u200b@\u200beveryone",
    "line one\r\nline two\rline three\u2028four",
]
"""Forge strings as an attacker writes them (a job's name, a status's description...)."""
TEXT = st.text(
    alphabet=st.sampled_from([*"`|\\@#*_~[]()<>!&;:/.-= \n\r\tab1", "\x1b", "\u202e"]),
    max_size=60,
)


def only_span(text: str) -> str:
    """``text`` in a paragraph, rendered, asserted to be one code span: its content."""
    rendered = MARKDOWN.render(f"before {code(text)} after")
    prefix, suffix = "<p>before <code>", "</code> after</p>\n"
    assert rendered.startswith(prefix), rendered
    assert rendered.endswith(suffix), rendered
    inside = rendered[len(prefix) : -len(suffix)]
    assert "<code>" not in inside, rendered
    assert "</code>" not in inside, rendered
    return html.unescape(inside)


def expected_inline(text: str) -> str:
    shown = clean(text, multiline=False)
    shown = shown if len(shown) <= INLINE_LIMIT else shown[: INLINE_LIMIT - 1] + "…"
    return shown if shown.strip() else (shown or " ")


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_string_inline_is_one_code_span_of_its_text(text: str) -> None:
    assert only_span(text) == expected_inline(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_string_in_a_table_cell_stays_in_its_cell(text: str) -> None:
    table = f"| check | command |\n| --- | --- |\n| test | {code(text, table=True)} |\n"
    rendered = MARKDOWN.render(table)
    body = rendered.split("<tbody>\n", 1)[1]
    rows = body.split("</tr>\n")
    assert rows[0].startswith("<tr>\n<td>test</td>\n<td><code>"), rendered
    cell = rows[0].removeprefix("<tr>\n<td>test</td>\n<td><code>")
    assert cell.endswith("</code></td>\n"), rendered
    assert html.unescape(cell.removesuffix("</code></td>\n")) == expected_inline(text)
    assert rows[1:] == ["</tbody>\n</table>\n"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_text_as_a_block_is_one_code_block_of_its_lines(text: str) -> None:
    rendered = MARKDOWN.render(f"before\n\n{block(text)}\n\nafter")
    prefix, suffix = "<p>before</p>\n<pre><code>", "</code></pre>\n<p>after</p>\n"
    assert rendered.startswith(prefix), rendered
    assert rendered.endswith(suffix), rendered
    inside = html.unescape(rendered[len(prefix) : -len(suffix)])
    assert inside == clean(text).rstrip("\n") + "\n"


@given(TEXT)
def test_any_text_inline_is_one_code_span_of_its_text(text: str) -> None:
    assert only_span(text) == expected_inline(text)


@given(TEXT)
def test_any_text_as_a_block_is_one_code_block(text: str) -> None:
    rendered = MARKDOWN.render(f"{block(text)}\n\nafter")
    assert rendered.startswith("<pre><code>"), rendered
    assert rendered.endswith("</code></pre>\n<p>after</p>\n"), rendered
    assert rendered.count("<pre>") == 1


def test_a_long_name_is_cut() -> None:
    assert len(code("x" * 10_000)) < INLINE_LIMIT + 10
