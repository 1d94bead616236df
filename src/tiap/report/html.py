"""Blocks (:mod:`tiap.report.blocks`) written as HTML, for a page of
:mod:`tiap.report.page`.

Data fragments are made inert and escaped with :func:`tiap.text.inert_html`; the
report's own text is escaped too, with its ``**bold**`` kept as bold and its code
spans (backticks) as ``<code>``. Tables sit
in a box that scrolls sideways, so a wide one never widens the page; numeric cells
are right-aligned, long ones may wrap. Figures are inline SVG in a wrapping row,
each with its caption.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Iterable, Sequence

from tiap.report.blocks import (
    Badge,
    Block,
    Bullets,
    Cell,
    Data,
    Figure,
    Fragment,
    Heading,
    Links,
    Para,
    Table,
    parts_of,
    plain,
)
from tiap.report.numbers import MISSING
from tiap.text import inert_html as e

#: a number (``0.830``, ``-0.012``, ``29.2%``, ``12 (3.4%)``) or the missing value
_NUMERIC = re.compile(rf"^[-+]?[0-9.,%]+(?: \(.*\))?$|^{re.escape(MISSING)}$")
#: Cells longer than this may wrap; shorter ones stay on one line (the table scrolls).
_WRAP_AT = 28


def _own(text: str) -> str:
    """The report's own text: escaped, with its ``**bold**`` kept as bold and its
    Markdown code spans (backticks) shown as code, so no backtick shows as text."""
    escaped = _html.escape(text, quote=True)
    bold = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", bold)


def _fragment(part: Fragment) -> str:
    if isinstance(part, Data):
        return e(part.text)
    if isinstance(part, Badge):
        return f'<span class="{e(part.kind)}">{e(part.text)}</span>'
    return _own(part)


def _inline(parts: Iterable[Fragment]) -> str:
    return "".join(_fragment(p) for p in parts)


def _cell(cell: Cell, tag: str) -> str:
    parts = parts_of(cell)
    numeric = isinstance(cell, int) or (
        isinstance(cell, str) and bool(_NUMERIC.match(cell)) and tag == "td"
    )
    long = sum(len(plain(p)) for p in parts) > _WRAP_AT
    cls = ' class="num"' if numeric else ' class="long"' if long else ""
    return f"<{tag}{cls}>{_inline(parts)}</{tag}>"


def figures_html(figures: Sequence[Figure]) -> str:
    """Figures in a wrapping row, each with its caption (escaped); styled inline, so any
    page can hold them. Empty without figures."""
    if not figures:
        return ""
    items = "".join(
        f'<figure style="margin:0;max-width:100%">{f.svg}'
        f'<figcaption style="font-size:.9em;color:#555;max-width:60em">{e(f.caption)}'
        "</figcaption></figure>"
        for f in figures
    )
    return (
        '<div class="figs" style="display:flex;flex-wrap:wrap;gap:1.5em;'
        f'align-items:flex-start;margin:1em 0">{items}</div>'
    )


def _block(b: Block) -> str:
    if isinstance(b, Heading):
        level = min(max(b.level, 1), 6)
        return f"<h{level}>{_inline(b.parts)}</h{level}>"
    if isinstance(b, Para):
        return f"<p>{_inline(b.parts)}</p>"
    if isinstance(b, Table):
        head = "".join(_cell(h, "th") for h in b.header)
        rows = "".join("<tr>" + "".join(_cell(c, "td") for c in row) + "</tr>" for row in b.rows)
        return (
            f'<div class="wide"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
        )
    if isinstance(b, Bullets):
        return "<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>"
    if isinstance(b, Links):
        return (
            "<ul>"
            + "".join(f'<li><a href="{e(href)}">{e(name)}</a></li>' for name, href in b.items)
            + "</ul>"
        )
    return figures_html(b.items)


def to_html(blocks: Iterable[Block]) -> str:
    """The blocks as HTML, one per line (figures without any left out)."""
    return "\n".join(part for part in map(_block, blocks) if part)


def sectioned_html(sections: Sequence[Sequence[Block]], contents: str = "Contents") -> str:
    """Sections (each a list of blocks that starts with its heading) as a table of
    contents (links to anchors, no scripts) and each section in its own ``<details>``,
    open, whose ``<summary>`` is the heading: a reader folds what they are done with.
    Empty sections are left out; a section without a heading is shown as it is."""
    toc: list[str] = []
    body: list[str] = []
    for i, section in enumerate(s for s in sections if s):
        head, *rest = section
        if not isinstance(head, Heading):
            body.append(to_html(section))
            continue
        anchor = f"section-{i + 1}"
        level = min(max(head.level, 1), 6)
        toc.append(f'<li><a href="#{anchor}">{_inline(head.parts)}</a></li>')
        body.append(
            f'<details open id="{anchor}"><summary><h{level}>{_inline(head.parts)}</h{level}>'
            f"</summary>\n{to_html(rest)}\n</details>"
        )
    nav = (
        f'<nav class="toc"><strong>{_own(contents)}</strong><ol>{"".join(toc)}</ol></nav>'
        if toc
        else ""
    )
    return "\n".join(part for part in (nav, *body) if part)
