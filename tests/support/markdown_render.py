"""What a CommonMark renderer makes of tiap's Markdown (markdown-it-py, which Rich
already brings): the HTML tags it would produce and the text a reader would see. An
independent check that data escaped for Markdown stays text (no raw HTML, link,
image or emphasis made from it)."""

from __future__ import annotations

from html.parser import HTMLParser


class _Seen(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _seen(md: str) -> _Seen:
    from markdown_it import MarkdownIt

    seen = _Seen()
    seen.feed(MarkdownIt("commonmark").enable("table").render(md))
    return seen


def md_tags(md: str) -> set[str]:
    """The HTML tags a CommonMark renderer (raw HTML allowed, tables on) makes of
    ``md``."""
    return _seen(md).tags


def md_text(md: str) -> str:
    """The text a reader sees of ``md`` rendered (tags dropped, escapes resolved)."""
    return "".join(_seen(md).text)
