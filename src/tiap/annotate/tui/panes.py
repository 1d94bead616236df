"""Panes of pre-rendered lines: new text on screen is a repaint, never a layout pass.

A :class:`TextPane` keeps its text as a list of already wrapped lines (Textual
strips) and draws each screen row by picking one, the way Textual's own ``Log``
widget does. Its size comes from the stylesheet, not from its text, so showing
the next case only repaints the pane (a ``Static`` in a scrolling container
makes Textual lay out the whole screen again, because the text's height may
have changed). Lines can be rendered ahead of time (:meth:`TextPane.render_parts`)
and handed to :meth:`TextPane.show` later.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual, VisualType, visualize
from textual.widget import Widget

_EMPTY = Strip([], 0)


def changed_rows(before: Sequence[Strip], after: Sequence[Strip]) -> tuple[int, int]:
    """The rows ``[first, end)`` where two renders of a pane differ (empty if none)."""
    common = min(len(before), len(after))
    first = 0
    while first < common and (before[first] is after[first] or before[first] == after[first]):
        first += 1
    if len(before) != len(after):
        return first, max(len(before), len(after))
    end = len(after)
    while end > first and (before[end - 1] is after[end - 1] or before[end - 1] == after[end - 1]):
        end -= 1
    return first, end


class TextPane(ScrollView):
    """A scrollable pane showing text parts (Textual content or rich renderables)
    one below the other; long text scrolls inside the pane."""

    DEFAULT_CSS = """
    TextPane {
        overflow-x: hidden;
        overflow-y: auto;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(Widget.auto_links, False)  # plain text: no per-line link styling
        self._parts: tuple[VisualType, ...] = ()
        self._lines: list[Strip] = []
        self._lines_width = 0

    @property
    def line_width(self) -> int:
        """Cells for a line of text (inside border, padding and scrollbar gutter);
        0 before the first layout."""
        return max(self.scrollable_content_region.width, 0)

    def render_parts(self, parts: Sequence[VisualType], width: int | None = None) -> list[Strip]:
        """Wrap ``parts`` to lines of the pane's width, as a ``Static`` would draw them."""
        width = self.line_width if width is None else width
        if width <= 0:
            return []
        style = self.visual_style
        lines: list[Strip] = []
        for part in parts:
            visual = visualize(self, part, markup=False)
            lines.extend(Visual.to_strips(self, visual, width, None, style))
        return lines

    def show(
        self,
        parts: Sequence[VisualType],
        lines: list[Strip] | None = None,
        *,
        width: int | None = None,
        home: bool = False,
    ) -> None:
        """Show ``parts``; ``lines`` are the parts already rendered at ``width``
        (used when the pane still has that width, otherwise rendered again)."""
        self._parts = tuple(parts)
        current = self.line_width
        if lines is None or width != current:
            lines = self.render_parts(self._parts, current)
        before, before_width = self._lines, self._lines_width
        self._lines = lines
        self._lines_width = current
        self._set_height(len(lines))
        if home and self.scroll_offset.y:
            self.scroll_to(y=0, animate=False)  # repaints the whole pane
        elif before_width != current:
            self.refresh()
        else:  # repaint only the rows whose line changed
            first, end = changed_rows(before, lines)
            if first < end:
                self.refresh_lines(first, end - first)

    def _set_height(self, height: int) -> None:
        size = Size(self._lines_width, height)
        if size == self.virtual_size:
            return
        # Assigning ``virtual_size`` would ask for a layout pass of the screen every
        # time. The pane's size comes from the stylesheet, so its height moves no
        # widget: set it without watchers, and ask for a layout pass only when the
        # scrollbar appears or goes away (a pane not laid out yet gets its
        # scrollbar from its first layout pass).
        self.set_reactive(Widget.virtual_size, size)
        if not self.container_size:
            return
        scrollbar = self._needs_scrollbar(height)
        if scrollbar != self.show_vertical_scrollbar:
            self.show_vertical_scrollbar = scrollbar  # a layout reactive: one pass
            self.vertical_scrollbar.display = scrollbar
        if scrollbar:
            self.vertical_scrollbar.window_virtual_size = height
            self.vertical_scrollbar.window_size = self.container_size.height
        self.scroll_y = self.scroll_y  # validated: kept within the new height

    def _needs_scrollbar(self, height: int) -> bool:
        """Whether ``height`` lines need the vertical scrollbar (as Textual decides
        it for ``overflow-y``; the panes never scroll sideways)."""
        overflow = self.styles.overflow_y
        if overflow == "scroll":
            return True
        return overflow == "auto" and height > self.container_size.height

    def on_resize(self) -> None:
        if self.line_width != self._lines_width:
            self.show(self._parts)

    def render_line(self, y: int) -> Strip:
        index = y + self.scroll_offset.y
        if 0 <= index < len(self._lines):
            return self._lines[index]
        return _EMPTY  # Textual pads every line to the pane's width


class TextLine(TextPane, can_focus=False):
    """A one-line pane (status, messages): no scrolling, no focus."""

    DEFAULT_CSS = """
    TextLine {
        overflow-x: hidden;
        overflow-y: hidden;
        height: 1;
    }
    """
