"""The rescoring reports as blocks, rendered to Markdown and to HTML from the same tables.

A section is a list of :data:`Block`: headings, paragraphs, tables and bullet
lists. Their text is a sequence of fragments: a plain ``str`` is the report's
own wording (trusted), a :class:`Data` is text from the bundle (run and store
names, categories, settings, the dataset name, warnings), which each renderer
passes through :mod:`tiap.text` (:func:`~tiap.text.inert_md` for
Markdown, :func:`~tiap.text.inert_html` for HTML).
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tiap.text import inert_html as html_text
from tiap.text import inert_md as md


@dataclass(frozen=True)
class Data:
    """Text from the data: always escaped by the renderer."""

    text: str


Fragment = str | Data
#: A table cell: a number, one fragment, or several fragments in a row.
Cell = int | Fragment | tuple[Fragment, ...]


def data(value: object) -> Data:
    return Data(str(value))


def joined(sep: str, items: Iterable[Fragment]) -> tuple[Fragment, ...]:
    """``items`` with ``sep`` between them (a cell or paragraph of several fragments)."""
    out: list[Fragment] = []
    for i, item in enumerate(items):
        if i:
            out.append(sep)
        out.append(item)
    return tuple(out)


@dataclass(frozen=True)
class Heading:
    level: int
    parts: tuple[Fragment, ...]


@dataclass(frozen=True)
class Para:
    parts: tuple[Fragment, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[Cell, ...]
    rows: list[tuple[Cell, ...]] = field(default_factory=list)


@dataclass(frozen=True)
class Bullets:
    items: Sequence[tuple[Fragment, ...]]


Block = Heading | Para | Table | Bullets


def heading(level: int, *parts: Fragment) -> Heading:
    return Heading(level, parts)


def para(*parts: Fragment) -> Para:
    return Para(parts)


def table(header: Sequence[Cell], rows: Iterable[Sequence[Cell]]) -> Table:
    return Table(tuple(header), [tuple(r) for r in rows])


def _parts(cell: Cell) -> tuple[Fragment, ...]:
    if isinstance(cell, int):
        return (str(cell),)
    if isinstance(cell, tuple):
        return cell
    return (cell,)


# --- Markdown ---------------------------------------------------------------------------


def _md_inline(parts: Iterable[Fragment]) -> str:
    return "".join(md(p.text) if isinstance(p, Data) else p for p in parts)


def _md_cell(cell: Cell) -> str:
    """A table cell: data escaped by :func:`md`; the report's own text with ``|`` escaped."""
    return "".join(
        md(p.text) if isinstance(p, Data) else p.replace("|", "\\|").replace("\n", " ")
        for p in _parts(cell)
    )


def to_markdown(blocks: Iterable[Block]) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out += ["#" * b.level + " " + _md_inline(b.parts), ""]
        elif isinstance(b, Para):
            out += [_md_inline(b.parts), ""]
        elif isinstance(b, Table):
            out.append("| " + " | ".join(_md_cell(h) for h in b.header) + " |")
            out.append("|" + "|".join("---" for _ in b.header) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("")
        else:
            out += ["- " + _md_inline(item) for item in b.items]
            out.append("")
    return out


# --- HTML -------------------------------------------------------------------------------

_NUMERIC = re.compile(r"^[-+−–]?[0-9.,%]+(?: \(.*\))?$|^–$")


def _html_inline(parts: Iterable[Fragment]) -> str:
    return "".join(html_text(p.text) if isinstance(p, Data) else _inline_markup(p) for p in parts)


def _inline_markup(text: str) -> str:
    """The report's own text: escaped, with its ``**bold**`` kept as bold."""
    escaped = _html.escape(text, quote=True)
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)


#: Cells longer than this may wrap; shorter ones stay on one line (the table scrolls).
_WRAP_AT = 28


def _html_cell(cell: Cell, tag: str) -> str:
    parts = _parts(cell)
    numeric = isinstance(cell, int) or (
        isinstance(cell, str) and bool(_NUMERIC.match(cell)) and tag == "td"
    )
    long = sum(len(p.text if isinstance(p, Data) else p) for p in parts) > _WRAP_AT
    cls = ' class="num"' if numeric else ' class="long"' if long else ""
    return f"<{tag}{cls}>{_html_inline(parts)}</{tag}>"


def to_html(blocks: Iterable[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            level = min(max(b.level, 1), 6)
            out.append(f"<h{level}>{_html_inline(b.parts)}</h{level}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_html_inline(b.parts)}</p>")
        elif isinstance(b, Table):
            head = "".join(_html_cell(h, "th") for h in b.header)
            rows = "".join(
                "<tr>" + "".join(_html_cell(c, "td") for c in row) + "</tr>" for row in b.rows
            )
            out.append(
                f'<div class="wide"><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{rows}</tbody></table></div>"
            )
        else:
            out.append("<ul>" + "".join(f"<li>{_html_inline(i)}</li>" for i in b.items) + "</ul>")
    return "\n".join(out)
