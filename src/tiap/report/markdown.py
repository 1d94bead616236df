"""Blocks (:mod:`tiap.report.blocks`) written as Markdown (GitHub flavour).

Data fragments are made inert and literal with :func:`tiap.text.inert_md`; the
report's own text is written as it is (in a table cell with ``|`` escaped and on
one line). Figures are left out: Markdown has only their tables.
"""

from __future__ import annotations

from collections.abc import Iterable

from tiap.report.blocks import Block, Bullets, Cell, Data, Fragment, Heading, Links, Para, Table
from tiap.report.blocks import parts_of as _parts
from tiap.text import inert_md as md


def _text(part: Fragment) -> str:
    return md(part.text) if isinstance(part, Data) else part if isinstance(part, str) else part.text


def _inline(parts: Iterable[Fragment]) -> str:
    return "".join(_text(p) for p in parts)


def _cell(cell: Cell) -> str:
    """A table cell: data escaped by :func:`md`; the report's own text with ``|`` escaped."""
    return "".join(
        md(p.text) if isinstance(p, Data) else _text(p).replace("|", "\\|").replace("\n", " ")
        for p in _parts(cell)
    )


def markdown_lines(blocks: Iterable[Block]) -> list[str]:
    """The blocks' lines, each block followed by a blank line."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + _inline(b.parts), ""]
        elif isinstance(b, Para):
            out += [_inline(b.parts), ""]
        elif isinstance(b, Table):
            out.append("| " + " | ".join(_cell(h) for h in b.header) + " |")
            out.append("|" + "|".join("---" for _ in b.header) + "|")
            out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
        elif isinstance(b, Bullets):
            out += ["- " + _inline(item) for item in b.items]
            out.append("")
        elif isinstance(b, Links):
            out += [f"- [{name}]({href})" for name, href in b.items]
            out.append("")
    return out


def to_markdown(blocks: Iterable[Block]) -> str:
    """A Markdown file of the blocks (ending in one newline)."""
    return "\n".join(markdown_lines(blocks)).rstrip() + "\n"
