"""A report as blocks, written to Markdown (:mod:`tiap.report.markdown`) and to HTML
(:mod:`tiap.report.html`) from the same list, so both always say the same thing.

A report is a list of :data:`Block`: headings, paragraphs, tables, bullet lists,
links and figures (figures are drawn in HTML only). Their text is a sequence of
fragments: a plain ``str`` is the report's own wording (trusted; ``**bold**`` is
kept as bold), a :class:`Data` is text from the data (names, labels, notes, paths,
messages), which each writer passes through :mod:`tiap.text`
(:func:`~tiap.text.inert_md` for Markdown, :func:`~tiap.text.inert_html` for
HTML), and a :class:`Badge` is a status word shown as a coloured badge in HTML.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Data:
    """Text from the data: always escaped by the writer."""

    text: str


@dataclass(frozen=True)
class Badge:
    """A status word of the report's own (``pass``, ``fail``): a badge of class ``kind``
    in HTML, the word in Markdown."""

    text: str
    kind: str


Fragment = str | Data | Badge
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
class Figure:
    """One figure: its SVG (built escaped, :mod:`tiap.report.svg`) and its caption
    (plain text, escaped by the writer)."""

    svg: str
    caption: str


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


@dataclass(frozen=True)
class Links:
    """Links to other files of the report: (the report's own name for it, relative path)."""

    items: Sequence[tuple[str, str]]


@dataclass(frozen=True)
class Figures:
    """Figures in a row; HTML only (Markdown leaves them out)."""

    items: Sequence[Figure]


Block = Heading | Para | Table | Bullets | Links | Figures


def heading(level: int, *parts: Fragment) -> Heading:
    return Heading(level, parts)


def para(*parts: Fragment) -> Para:
    return Para(parts)


def table(header: Sequence[Cell], rows: Iterable[Sequence[Cell]]) -> Table:
    return Table(tuple(header), [tuple(r) for r in rows])


def bullets(items: Iterable[Fragment | tuple[Fragment, ...]]) -> Bullets:
    """A bullet list; an item is one fragment or several in a row."""
    return Bullets([i if isinstance(i, tuple) else (i,) for i in items])


def data_table(header: Sequence[object], rows: Iterable[Sequence[object]]) -> Table:
    """A table whose every cell is data (escaped), numbers kept as numbers."""

    def cell(value: object) -> Cell:
        return value if isinstance(value, int) else data(value)

    return table([data(h) for h in header], ([cell(c) for c in row] for row in rows))


def parts_of(cell: Cell) -> tuple[Fragment, ...]:
    """A cell's fragments (a number as its text)."""
    if isinstance(cell, int):
        return (str(cell),)
    if isinstance(cell, tuple):
        return cell
    return (cell,)


def plain(fragment: Fragment) -> str:
    """A fragment's text, unescaped (for measuring)."""
    return fragment if isinstance(fragment, str) else fragment.text
