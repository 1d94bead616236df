"""``tiap annotate tui``: label cases one at a time in the terminal (Textual).

The app only shows and forwards keys; :class:`~tiap.annotate.session.AnnotationSession`
does the work (queue, commits, undo, blindness). Each label is committed to the
workspace before the next case is drawn.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.reactive import var
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Footer

from tiap import runtime
from tiap.annotate.session import AnnotationSession
from tiap.annotate.tui import pane_text
from tiap.annotate.tui.dialogs import HelpScreen, TextPrompt
from tiap.annotate.tui.panes import TextLine, TextPane
from tiap.errors import TiapError
from tiap.rubric.models import Rubric
from tiap.text import inert

#: key -> (action, footer text); the rubric's label keys are added per rubric.
NAV_BINDINGS: tuple[Binding, ...] = (
    Binding("n,right", "next", "next"),
    Binding("p,left", "prev", "prev"),
    Binding("u", "undo", "undo"),
    Binding("e", "note", "note"),
    Binding("s", "skip", "skip"),
    Binding("slash", "jump", "jump"),
    Binding("r", "reveal", "reveal"),
    Binding("question_mark", "help", "help"),
    Binding("q", "quit_app", "quit"),
)
RESERVED_KEYS = frozenset("npuesr/?q")


#: the panes that show the case itself, in the order of :class:`CaseView`'s fields
CASE_PANES = ("head-pane", "evidence-pane", "memory-pane")
_VIEWS_KEPT = 8


@dataclass(frozen=True)
class CaseView:
    """A case's panes, rendered: the text of each case pane and its lines at the
    pane widths of the time (rendered again when a pane's width has changed)."""

    case_id: str
    widths: tuple[int, ...]
    parts: tuple[tuple[Text, ...], ...]
    lines: tuple[list[Strip], ...]


class CaseScreen(Screen[None]):
    """The main screen: one case, its evidence and memory (a qrels pair: the pair and
    its document, the annotation on reveal), the rubric, progress.

    Drawing a case only repaints panes of fixed size (no layout pass), and once a
    case is on screen the cases a key press most likely shows next (the next one
    to do, the following one) are rendered ahead while the rater reads.
    """

    BINDINGS: ClassVar[list[BindingType]] = list(NAV_BINDINGS)

    position: var[int] = var(0, always_update=True, init=False)
    revealed: var[bool] = var(False, init=False)

    def __init__(self, session: AnnotationSession) -> None:
        super().__init__()
        self.session = session
        #: the case id drawn on screen last (set once its panes are updated)
        self.shown_case_id: str | None = None
        self._shown: dict[str, Text] = {}
        self._views: OrderedDict[str, CaseView] = OrderedDict()
        self._rubric_table = pane_text.rubric_table(session)
        self._rubric_lines: tuple[int, list[Strip]] = (-1, [])

    # ----------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield TextLine(id="status")
        yield TextPane(id="head-pane")
        kind = self.session.rubric.case_kind
        left, right = pane_text.PANE_TITLES[kind]
        with Horizontal(id="middle"):
            evidence = TextPane(id="evidence-pane")
            evidence.border_title = left
            yield evidence
            memory = TextPane(id="memory-pane")
            memory.border_title = right
            memory.border_subtitle = pane_text.LEGENDS[kind]
            yield memory
        labels = TextPane(id="labels-pane")
        labels.border_title = "Labels"
        yield labels
        yield TextLine(id="message")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self._case_panes = tuple(self.query_one(f"#{pane}", TextPane) for pane in CASE_PANES)
        self._labels_pane = self.query_one("#labels-pane", TextPane)
        self.query_one("#memory-pane").focus()
        self.position = self.session.position
        if self.session.adjudicate:
            self.say(f"Adjudicating {len(self.session)} disagreements as {self.session.rater}.")
        else:
            self.say("Label with the keys below; ? shows help.")

    # ---------------------------------------------------------------- drawing

    def watch_position(self, position: int) -> None:
        self.revealed = False
        self.draw()

    def watch_revealed(self, revealed: bool) -> None:
        self.draw_labels()

    def _view(self, position: int) -> CaseView:
        """The case at ``position`` rendered for the panes as they are now."""
        case = self.session.case_at(position)
        widths = tuple(pane.line_width for pane in self._case_panes)
        view = self._views.get(case.case_id)
        if view is not None and view.widths == widths:
            self._views.move_to_end(case.case_id)
            return view
        cues = pane_text.cues_for(case)
        parts = (
            (pane_text.case_head(case, cues),),
            (pane_text.evidence_text(case, cues),),
            (pane_text.memory_text(case, cues),),
        )
        lines = tuple(
            pane.render_parts(texts, width)
            for pane, texts, width in zip(self._case_panes, parts, widths, strict=True)
        )
        view = CaseView(case.case_id, widths, parts, lines)
        self._views[case.case_id] = view
        if len(self._views) > _VIEWS_KEPT:
            self._views.popitem(last=False)
        return view

    def _prefetch(self) -> None:
        """Render ahead the cases the next key press most likely shows: the next case
        to do (label, skip) and the following one (next)."""
        if not all(pane.line_width for pane in self._case_panes):
            return
        session = self.session
        ahead = {session.next_todo(), min(session.position + 1, len(session) - 1)}
        for position in sorted(p for p in ahead if p is not None and p != session.position):
            self._view(position)

    def draw(self) -> None:
        view = self._view(self.session.position)
        for pane, parts, lines, width in zip(
            self._case_panes, view.parts, view.lines, view.widths, strict=True
        ):
            pane.show(parts, lines, width=width, home=True)
        self.draw_labels(home=True)
        self.shown_case_id = view.case_id
        self.call_after_refresh(self._prefetch)

    def _rubric(self, width: int) -> list[Strip]:
        """The rubric table's lines at ``width`` (they only change with the width)."""
        if self._rubric_lines[0] != width:
            lines = self._labels_pane.render_parts((self._rubric_table,), width)
            self._rubric_lines = (width, lines)
        return self._rubric_lines[1]

    def draw_labels(self, *, home: bool = False) -> None:
        panel = self.session.panel_labels() if self.revealed else None
        mine = pane_text.mine_text(self.session, revealed=self.revealed, panel=panel)
        pane = self._labels_pane
        if self._shown.get("mine") != mine:
            self._shown["mine"] = mine
            width = pane.line_width
            lines = pane.render_parts((mine,), width) + self._rubric(width)
            pane.show((mine, self._rubric_table), lines, width=width, home=home)
        elif home:
            pane.scroll_home(animate=False)
        self._show_line("status", pane_text.status_line(self.session))

    def _show_line(self, pane_id: str, text: Text) -> None:
        if self._shown.get(pane_id) != text:
            self._shown[pane_id] = text
            self.query_one(f"#{pane_id}", TextLine).show((text,))

    def say(self, text: str) -> None:
        """Show a message (it may quote data: case ids, labels, what was typed)."""
        self._show_line("message", Text(inert(text)))

    # ---------------------------------------------------------------- actions

    def action_label(self, name: str) -> None:
        record = self.session.label(name)  # committed before anything else happens
        done = f"Saved {record.label} for case {record.case_id}."
        if self.session.advance():
            self.say(done)
        else:
            self.say(f"{done} Every case in this queue is labelled; q quits.")
        self.position = self.session.position

    def action_next(self) -> None:
        self.session.move(1)
        self.position = self.session.position

    def action_prev(self) -> None:
        self.session.move(-1)
        self.position = self.session.position

    def action_skip(self) -> None:
        if self.session.advance():
            self.say("Skipped; the case stays unlabelled.")
        else:
            self.say("No other case left to do.")
        self.position = self.session.position

    def action_undo(self) -> None:
        step = self.session.undo()
        if step is None:
            self.say("Nothing to undo in this session.")
            return
        mine = self.session.my_label(step.case_id)
        now = mine.label if mine is not None else "no label (withdrawn)"
        self.say(f"Undone: case {step.case_id} is back to {now}.")
        self.position = self.session.position

    def action_reveal(self) -> None:
        if self.session.my_label() is None:
            self.say("Label this case first: the panel stays hidden until then.")
            return
        self.revealed = not self.revealed

    def action_note(self) -> None:
        current = self.session.pending_note() or ""
        mine = self.session.my_label()
        if mine is not None and mine.note and not self.session.adjudicate:
            current = mine.note

        def done(text: str | None) -> None:
            if text is None:
                return
            stored = self.session.note(text)
            self.say("Note saved with your label." if stored else "Note kept for your label.")
            self.draw_labels()

        self.app.push_screen(TextPrompt("Note for this case", value=current), done)

    def action_jump(self) -> None:
        def done(text: str | None) -> None:
            if not text:
                return
            try:
                self.session.jump(text)
            except TiapError as exc:
                self.say(str(exc))
                return
            self.say(f"Jumped to case {self.session.case_id}.")
            self.position = self.session.position

        self.app.push_screen(
            TextPrompt("Jump to", placeholder=f"a position 1-{len(self.session)} or a case id"),
            done,
        )

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.session.rubric))

    def action_quit_app(self) -> None:
        self.app.exit()


def case_screen_class(rubric: Rubric) -> type[CaseScreen]:
    """A :class:`CaseScreen` with the rubric's label keys bound to ``label``."""
    clash = sorted(lab.key for lab in rubric.labels if lab.key in RESERVED_KEYS)
    if clash:
        raise TiapError(
            f"rubric '{rubric.id}' uses key(s) {', '.join(clash)}, which the app needs for "
            f"navigation ({' '.join(sorted(RESERVED_KEYS))}); give its labels other keys"
        )
    label_bindings = [
        Binding(lab.key, f"label('{lab.name}')", lab.name, show=False) for lab in rubric.labels
    ]
    return type("RubricCaseScreen", (CaseScreen,), {"BINDINGS": [*label_bindings, *NAV_BINDINGS]})


class AnnotateApp(App[None]):
    """The terminal labelling app over an :class:`AnnotationSession`."""

    CSS_PATH = Path(__file__).with_name("annotate.tcss")
    TITLE = "tiap annotate"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, session: AnnotationSession) -> None:
        if not len(session):
            raise TiapError("there are no cases to label in this queue")
        self._screen_class = case_screen_class(session.rubric)
        super().__init__()
        self.session = session

    def get_default_screen(self) -> Screen:
        return self._screen_class(self.session)

    def on_mount(self) -> None:
        # Everything alive now (libraries, the session) lives as long as the app:
        # inside tiap.runtime.tuned() (the tiap command) it is kept out of the garbage
        # collector's full passes, which otherwise cause pauses between key presses.
        runtime.long_lived("annotate-tui", collect=True)

    @property
    def case_screen(self) -> CaseScreen:
        screen = self.screen_stack[0] if self.screen_stack else None
        if not isinstance(screen, CaseScreen):
            raise RuntimeError("the case screen is not mounted")
        return screen
