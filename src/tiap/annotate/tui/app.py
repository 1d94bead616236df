"""``tiap annotate tui``: label cases one at a time in the terminal (Textual).

The app only shows and forwards keys; :class:`~tiap.annotate.session.AnnotationSession`
does the work (queue, commits, undo, blindness). Each label is committed to the
workspace before the next case is drawn.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Footer, Static

from tiap.annotate.session import AnnotationSession
from tiap.annotate.tui import render
from tiap.annotate.tui.dialogs import HelpScreen, TextPrompt
from tiap.errors import TiapError
from tiap.rubric.models import Rubric

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


class CaseScreen(Screen[None]):
    """The main screen: one case, its evidence and memory, the rubric, progress."""

    BINDINGS: ClassVar[list[BindingType]] = list(NAV_BINDINGS)

    position: var[int] = var(0, always_update=True, init=False)
    revealed: var[bool] = var(False, init=False)

    def __init__(self, session: AnnotationSession) -> None:
        super().__init__()
        self.session = session
        #: the case id drawn on screen last (set once its panes are updated)
        self.shown_case_id: str | None = None
        self._shown: dict[str, Text] = {}

    # ----------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with VerticalScroll(id="head-pane"):
            yield Static(id="head")
        with Horizontal(id="middle"):
            with VerticalScroll(id="evidence-pane") as ev:
                ev.border_title = "Gold source evidence"
                yield Static(id="evidence")
            with VerticalScroll(id="memory-pane") as mp:
                mp.border_title = "Credited memory"
                mp.border_subtitle = render.MEMORY_LEGEND
                yield Static(id="memory")
        with VerticalScroll(id="labels-pane") as lp:
            lp.border_title = "Labels"
            yield Static(id="mine")
            yield Static(render.rubric_table(self.session), id="rubric")
        yield Static(id="message")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
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

    def _show(self, selector: str, content: Text, *, layout: bool = True) -> None:
        """Update a widget when its content changed (drawing is the costly part).
        ``layout=False`` for fixed-size widgets: a repaint without a layout pass."""
        if self._shown.get(selector) != content:
            self._shown[selector] = content
            widget = self.query_one(selector, Static)
            widget.update(Content.from_rich_text(content), layout=layout)

    def draw(self) -> None:
        case = self.session.current
        cues = render.cues_for(case)
        self._show("#head", render.case_head(case, cues))
        self._show("#evidence", render.evidence_text(case, cues))
        self._show("#memory", render.memory_text(case, cues))
        for pane in ("#head-pane", "#evidence-pane", "#memory-pane", "#labels-pane"):
            self.query_one(pane, VerticalScroll).scroll_home(animate=False)
        self.draw_labels()
        self.shown_case_id = case.case_id

    def draw_labels(self) -> None:
        panel = self.session.panel_labels() if self.revealed else None
        self._show("#mine", render.mine_text(self.session, revealed=self.revealed, panel=panel))
        self._show("#status", render.status_line(self.session), layout=False)

    def say(self, text: str) -> None:
        self._show("#message", Text(text), layout=False)

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
        # keep it out of the garbage collector's full passes, which otherwise cause
        # pauses between key presses.
        gc.collect()
        gc.freeze()

    def on_unmount(self) -> None:
        gc.unfreeze()

    @property
    def case_screen(self) -> CaseScreen:
        screen = self.screen_stack[0] if self.screen_stack else None
        if not isinstance(screen, CaseScreen):
            raise RuntimeError("the case screen is not mounted")
        return screen
