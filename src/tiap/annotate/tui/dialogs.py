"""Modal screens of the terminal app: help, and a one-line text prompt."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from tiap.rubric.models import Rubric
from tiap.text import inert

KEY_HELP: tuple[tuple[str, str], ...] = (
    ("n / →", "next case"),
    ("p / ←", "previous case"),
    ("s", "skip: go to the next case you have not labelled"),
    ("u", "undo your last label (restores your previous label, or withdraws it)"),
    ("e", "add a note to this case (kept with your label)"),
    ("/", "jump to a position (1, 2, ...) or a case id"),
    ("r", "reveal the panel's labels (only after you labelled the case)"),
    ("↑ ↓ PgUp PgDn", "scroll the focused pane; Tab moves focus between panes"),
    ("?", "this help"),
    ("q", "quit (every confirmed label is already saved)"),
)


def help_text(rubric: Rubric) -> Text:
    """The help screen: the rubric (made :func:`~tiap.text.inert`) and the keys."""
    out = Text()
    out.append(inert(f"Rubric {rubric.id} (version {rubric.version})") + "\n", style="bold")
    if rubric.description:
        out.append(" ".join(inert(rubric.description).split()) + "\n")
    out.append("\nLabel keys: label the case, save it, and go to the next case to do\n", "bold")
    for lab in rubric.labels:
        out.append(f" {inert(lab.key)} ", style="bold reverse")
        out.append(f" {inert(lab.name)}: ", style="bold")
        out.append(" ".join(inert(lab.definition).split()) + "\n")
    out.append("\nOther keys\n", style="bold")
    for key, what in KEY_HELP:
        out.append(f" {key:<14}", style="bold")
        out.append(f"{what}\n")
    out.append("\nEsc, q or ? closes this help.", style="dim")
    return out


class HelpScreen(ModalScreen[None]):
    BINDINGS = [  # noqa: RUF012 (Textual's convention)
        Binding("escape,q,question_mark", "close", "close"),
    ]

    def __init__(self, rubric: Rubric) -> None:
        super().__init__()
        self.rubric = rubric

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_text(self.rubric), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)


class TextPrompt(ModalScreen[str | None]):
    """Ask for one line of text; Enter confirms, Esc cancels (result None). The
    title and the text to edit are shown made :func:`~tiap.text.inert` (a stored
    note with control characters comes back with placeholders)."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]  # noqa: RUF012

    def __init__(self, title: str, *, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.title_text = inert(title)
        self.value = inert(value)
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label(Text(self.title_text), id="prompt-title")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Label("Enter confirms · Esc cancels", id="prompt-hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
