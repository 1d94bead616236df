"""The terminal app shows text from data inert: escape sequences and control
characters as placeholders, markup as literal text (Pilot, headless)."""

from __future__ import annotations

import re
from pathlib import Path

from annotate_support import (
    HOSTILE,
    HOSTILE_SPEAKER,
    hostile_workspace,
    human_label,
    judge_label,
    screen_text,
)

from tiap.annotate.session import AnnotationSession
from tiap.annotate.tui.app import AnnotateApp
from tiap.annotate.tui.dialogs import HelpScreen, TextPrompt
from tiap.annotate.tui.panes import TextPane
from tiap.cases.workspace import Workspace
from tiap.rubric import parse_rubric
from tiap.text import inert

SIZE = (100, 40)
#: what a terminal would act on (newline and tab aside)
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _pane_text(pane: TextPane) -> list[str]:
    """The pane's rendered lines (every line, also those scrolled out of view)."""
    return [
        "".join(seg.text for seg in pane.render_line(y)).rstrip()
        for y in range(pane.virtual_size.height)
    ]


async def test_hostile_case_text_is_shown_with_placeholders(tmp_path: Path, rubric) -> None:
    db = hostile_workspace(tmp_path / "w.sqlite")
    with Workspace(db) as ws:
        app = AnnotateApp(AnnotationSession(ws, rubric, "alice", subset="val"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            text = screen_text(app)
            screen = app.case_screen
            memory = _pane_text(screen.query_one("#memory-pane", TextPane))
            head = _pane_text(screen.query_one("#head-pane", TextPane))
            evidence = _pane_text(screen.query_one("#evidence-pane", TextPane))
    assert UNSAFE.search(text) is None, repr(text)
    # the memory pane shows the stored text, each control as its placeholder
    # (the pane wraps at spaces: compare the words)
    assert memory[0].startswith("rank ")
    assert memory[0].endswith(f"· {inert(HOSTILE['memory_id'])}")
    assert " ".join(" ".join(memory[1:]).split()) == " ".join(inert(HOSTILE["memory_text"]).split())
    for shown in ("␛]0;PWNED␇went", "␛[31mred␛[0m", "␛]52;c;UFdORUQ=␛\\on", "␛[3;2H␛[2Kthe"):
        assert shown in text
    assert "[bold]x[/bold]" in text  # markup in data is literal
    assert "\\u202eevil\\u202c." in text
    head_text = " ".join(" ".join(head).split())
    assert inert(HOSTILE["question"]) in head_text
    assert "[/oops]?" in head_text
    assert "category temporal␛[7m" in head_text
    assert inert(HOSTILE_SPEAKER) in " ".join(evidence)


async def test_names_labels_notes_and_reasons_are_inert(tmp_path: Path, rubric) -> None:
    db = hostile_workspace(tmp_path / "w.sqlite")
    note = "see \x1b]0;NOTE\x07 [red]here[/red]"
    with Workspace(db) as ws:
        rater = "alice\x1b[7m"
        mine = human_label("c0000", rater, "supports").model_copy(update={"note": note})
        ws.add_labels(
            [
                mine,
                judge_label("c0000", "judge\x1b[31mX", "partial"),
                judge_label("c0000", "j2", None, reason="provider: \x1b[2J\x9b1m [/b]"),
            ]
        )
        app = AnnotateApp(AnnotationSession(ws, rubric, rater, subset="val"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.case_screen
            screen.session.jump("c0000")
            screen.position = screen.session.position
            await pilot.press("r")
            await pilot.pause()
            text = screen_text(app)
    assert UNSAFE.search(text) is None, repr(text)
    assert "alice␛[7m · val" in text  # the status line
    assert "Your label: supports   note: see ␛]0;NOTE␇ [red]here[/red]" in text
    assert "judge␛[31mX (judge): partial" in text
    assert "abstained (provider: ␛[2J\\x9b1m [/b])" in text


async def test_note_prompt_shows_the_stored_note_inert(tmp_path: Path, rubric) -> None:
    db = hostile_workspace(tmp_path / "w.sqlite")
    note = "see \x1b]0;NOTE\x07 [red]here[/red]"
    with Workspace(db) as ws:
        ws.add_label(human_label("c0000", "alice", "supports").model_copy(update={"note": note}))
        app = AnnotateApp(AnnotationSession(ws, rubric, "alice", subset="val"))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.case_screen
            screen.session.jump("c0000")
            screen.position = screen.session.position
            await pilot.pause()
            assert f"note: {inert(note)}" in screen_text(app)
            await pilot.press("e")
            await pilot.pause()
            assert isinstance(app.screen, TextPrompt)
            assert app.screen.value == "see ␛]0;NOTE␇ [red]here[/red]"
            assert UNSAFE.search(screen_text(app)) is None


RUBRIC_WITH_MARKUP = "\n".join(
    [
        'id = "markup"',
        'version = "1 [b]"',
        'description = "Closes nothing: [/oops] \\u001b]0;RUBRIC\\u0007 and [bold]not bold[/bold]"',
        'fields = ["memory"]',
        "[[labels]]",
        'name = "yes"',
        'key = "1"',
        'definition = "It [/oops] supports \\u001b[31mred\\u001b[0m [link=http://x]link[/link]"',
        "[[labels]]",
        'name = "no"',
        'key = "2"',
        'definition = "No [/]."',
        "[prompt]",
        'system = "s"',
        'user = "{{memory}}"',
    ]
)


async def test_rubric_markup_and_controls_render_as_text(ws, tmp_path: Path) -> None:
    rubric = parse_rubric(RUBRIC_WITH_MARKUP, "markup.toml")
    app = AnnotateApp(AnnotationSession(ws, rubric, "alice", subset="val"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = screen_text(app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        help_screen = screen_text(app)
        await pilot.press("escape", "1")
        await pilot.pause()
        after = screen_text(app)
    assert "It [/oops] supports ␛[31mred␛[0m [link=http://x]link[/link]" in main
    assert "No [/]." in main
    assert "Rubric markup (version 1 [b])" in help_screen
    assert "Closes nothing: [/oops] ␛]0;RUBRIC␇ and [bold]not bold[/bold]" in help_screen
    assert "It [/oops] supports ␛[31mred␛[0m" in help_screen
    assert "Saved yes for case c0000." in after  # the app works on
    for text in (main, help_screen, after):
        assert UNSAFE.search(text) is None
