"""The terminal app, driven headless with Textual's Pilot: keys -> rows in SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from annotate_support import human_label, judge_label, make_case, screen_text

from tiap.annotate.session import ADJUDICATED, AnnotationSession
from tiap.annotate.tui.app import AnnotateApp, case_screen_class
from tiap.annotate.tui.dialogs import HelpScreen, TextPrompt
from tiap.annotate.tui.panes import TextPane
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import parse_rubric

SIZE = (100, 40)


def _rows(path: Path, rater: str) -> list[tuple[str, str | None, str | None]]:
    """(case, label, reason) of a rater's rows, read through a separate connection."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT case_id, label, reason FROM labels WHERE rater = ? ORDER BY id", (rater,)
        ).fetchall()
    finally:
        conn.close()


def _app(ws: Workspace, rubric, rater: str = "alice", **kw) -> AnnotateApp:
    return AnnotateApp(AnnotationSession(ws, rubric, rater, subset="val", **kw))


async def test_label_keys_store_rows_and_advance(ws, ws_path, rubric) -> None:
    app = _app(ws, rubric)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.case_screen
        assert screen.shown_case_id == "c0000"
        for key, case_id in (("1", "c0000"), ("2", "c0001"), ("3", "c0002")):
            assert screen.shown_case_id == case_id
            await pilot.press(key)
            # committed before the next case is on screen: another connection sees it
            assert _rows(ws_path, "alice")[-1][0] == case_id
            assert screen.shown_case_id != case_id
        assert screen.shown_case_id == "c0003"
        text = screen_text(app)
        assert "case 4/10 · done 3/10" in text
        assert "Saved does_not_support for case c0002." in text
    assert _rows(ws_path, "alice") == [
        ("c0000", "supports", None),
        ("c0001", "partial", None),
        ("c0002", "does_not_support", None),
    ]
    rec = ws.latest_labels(raters=["alice"])[0]
    assert (rec.rater_kind, rec.origin, rec.rubric_hash) == ("human", "tui", rubric.content_hash)


async def test_navigation_skip_and_undo(ws, ws_path, rubric) -> None:
    app = _app(ws, rubric)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.case_screen
        await pilot.press("right", "n")
        assert screen.shown_case_id == "c0002"
        await pilot.press("left", "p", "p")  # clamps at the first case
        assert screen.shown_case_id == "c0000"
        await pilot.press("s")  # skip: no row, next case
        assert screen.shown_case_id == "c0001"
        assert _rows(ws_path, "alice") == []
        await pilot.press("1")  # c0001 supports -> c0002
        await pilot.press("p", "3")  # relabel c0001 -> does_not_support
        assert _rows(ws_path, "alice")[-1] == ("c0001", "does_not_support", None)
        await pilot.press("u")  # restore the previous label
        assert screen.shown_case_id == "c0001"
        assert "Undone: case c0001 is back to supports." in screen_text(app)
        await pilot.press("u")  # no label before that: withdrawn
        assert "Your label: none yet" in screen_text(app)
        await pilot.press("u")
        assert "Nothing to undo in this session." in screen_text(app)
    assert _rows(ws_path, "alice") == [
        ("c0001", "supports", None),
        ("c0001", "does_not_support", None),
        ("c0001", "supports", None),
        ("c0001", None, "retracted"),
    ]
    assert ws.latest_labels(raters=["alice"]) == []


async def test_restart_resumes_at_first_unlabelled(ws, ws_path, rubric) -> None:
    app = _app(ws, rubric)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s", "1", "2")  # c0000 skipped, c0001 and c0002 labelled
        await pilot.press("q")
    assert app.return_code == 0
    with Workspace(ws_path) as again:
        app2 = _app(again, rubric)
        async with app2.run_test(size=SIZE) as pilot:
            screen = app2.case_screen
            assert screen.shown_case_id == "c0000"
            assert "done 2/10" in screen_text(app2)
            await pilot.press("1")
            assert screen.shown_case_id == "c0003"  # the next case not yet labelled


async def test_blind_until_labelled_then_reveal(ws, rubric) -> None:
    ws.add_labels(
        [
            judge_label("c0000", "oracle-judge", "partial"),
            judge_label("c0000", "flaky-judge", None, "not_json"),
            human_label("c0000", "bob", "supports"),
        ]
    )
    app = _app(ws, rubric)
    async with app.run_test(size=SIZE) as pilot:
        before = screen_text(app)
        for hidden in ("oracle-judge", "flaky-judge", "bob", "not_json"):
            assert hidden not in before
        await pilot.press("r")  # refused before labelling
        after_r = screen_text(app)
        assert "oracle-judge" not in after_r
        assert "Label this case first" in after_r
        await pilot.press("3", "p")
        assert "hidden (press r to reveal)" in screen_text(app)
        assert "oracle-judge" not in screen_text(app)
        await pilot.press("r")
        shown = screen_text(app)
        assert "oracle-judge (judge): partial" in shown
        assert "flaky-judge (judge): abstained (not_json)" in shown
        assert "bob (human): supports" in shown
        await pilot.press("n")  # moving on hides the panel again
        assert "oracle-judge" not in screen_text(app)


async def test_note_and_jump_prompts(ws, ws_path, rubric) -> None:
    app = _app(ws, rubric)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.case_screen
        await pilot.press("e")
        assert isinstance(app.screen, TextPrompt)
        await pilot.press(*"odd date", "enter")
        assert "note: odd date" in screen_text(app)
        await pilot.press("2")
        await pilot.press("slash")
        await pilot.press(*"c0007", "enter")
        assert screen.shown_case_id == "c0007"
        await pilot.press("slash", "3", "enter")
        assert screen.shown_case_id == "c0002"
        await pilot.press("slash", "9", "9", "enter")
        assert screen.shown_case_id == "c0002"
        assert "no position 99" in screen_text(app)
        await pilot.press("slash", "escape")  # cancel
        assert screen.shown_case_id == "c0002"
    rows = ws.label_history("c0000", "alice")
    assert [(r.label, r.note) for r in rows] == [("partial", "odd date")]


async def test_help_is_modal_and_label_keys_do_not_leak(ws, ws_path, rubric) -> None:
    app = _app(ws, rubric)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "does_not_support: The memory does not carry" in text
        await pilot.press("1")  # not a label while help is open
        assert _rows(ws_path, "alice") == []
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("1")
        assert _rows(ws_path, "alice") == [("c0000", "supports", None)]


async def test_adjudication_shows_both_labels_and_stores_adjudicated(ws, ws_path, rubric) -> None:
    ws.add_labels(
        [
            human_label("c0000", "alice", "supports"),
            human_label("c0000", "bob", "supports"),
            human_label("c0001", "alice", "supports"),
            human_label("c0001", "bob", "partial"),
            human_label("c0003", "alice", "partial"),
            human_label("c0003", "bob", "does_not_support"),
            judge_label("c0001", "oracle-judge", "does_not_support"),
        ]
    )
    app = _app(ws, rubric, rater="carol", adjudicate=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.case_screen
        assert screen.shown_case_id == "c0001"
        text = screen_text(app)
        assert "carol (adjudicating)" in text
        assert "Raters disagree: alice: supports · bob: partial" in text
        assert "oracle-judge" not in text  # judges stay hidden
        await pilot.press("2")
        assert screen.shown_case_id == "c0003"
        assert "alice: partial · bob: does_not_support" in screen_text(app)
    rows = ws.latest_labels(raters=[ADJUDICATED])
    assert [(r.case_id, r.label, r.note) for r in rows] == [
        ("c0001", "partial", "adjudicator: carol")
    ]


def test_rubric_keys_must_not_clash_with_navigation(rubric) -> None:
    data = rubric.model_dump()
    data["labels"][0]["key"] = "q"
    clashing = parse_rubric(
        "\n".join(
            [
                'id = "clash"',
                'version = "1"',
                'fields = ["memory"]',
                "[[labels]]",
                'name = "yes"',
                'key = "q"',
                'definition = "yes"',
                "[[labels]]",
                'name = "no"',
                'key = "0"',
                'definition = "no"',
                "[prompt]",
                'system = "s"',
                'user = "{{memory}}"',
            ]
        ),
        "clash.toml",
    )
    with pytest.raises(TiapError, match="uses key"):
        case_screen_class(clashing)
    screen_cls = case_screen_class(rubric)
    keys = {b.key for b in screen_cls.BINDINGS if hasattr(b, "key")}
    assert {"1", "2", "3", "n,right", "q"} <= keys


async def test_partial_repaints_leave_no_stale_rows(tmp_path, rubric) -> None:
    """Showing a case repaints only the rows that changed: after every key, the
    screen must equal a repaint of every widget from scratch (short and long
    texts, scrolled panes, a revealed panel and a note change the line counts)."""
    path = tmp_path / "mixed.sqlite"
    with Workspace(path) as ws:
        ws.add_cases([make_case(i, long=i % 3 == 0) for i in range(9)])
        ws.save_subset("val", [f"c{i:04d}" for i in range(9)])
        ws.add_labels([judge_label(f"c{i:04d}", "oracle-judge", "partial") for i in range(9)])
        app = _app(ws, rubric)
        keys = ["1", "down", "down", "2", "p", "r", "pagedown", "n", "tab", "down", "3"]
        keys += ["u", "r", "p", "p", "r", "s", "1", "n", "n", "2", "u", "u", "r"]
        keys += ["p", "e", "o", "k", "enter", "r", "n", "1", "p", "u"]
        texts = []
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
                shown = screen_text(app)
                for widget in app.screen.query("*"):
                    widget.refresh()
                await pilot.pause()
                assert screen_text(app) == shown, f"stale rows after {key!r}"
                texts.append(shown)
            seen = {text.splitlines()[0] for text in texts}
    assert len(seen) >= 6  # positions and counts changed along the way
    assert any("note: ok" in text for text in texts)
    assert any("oracle-judge (judge): partial" in text for text in texts)


def _scroll_state(app) -> dict[str, tuple[bool, int, int, int]]:
    """Per text pane: scrollbar shown, the scrollbar's notion of the text height,
    scroll offset and its maximum."""
    out = {}
    for pane in app.screen.query(TextPane):
        bar = pane.vertical_scrollbar.window_virtual_size if pane.show_vertical_scrollbar else 0
        out[pane.id] = (pane.show_vertical_scrollbar, bar, pane.scroll_offset.y, pane.max_scroll_y)
    return out


async def test_scrollbars_match_a_full_layout(tmp_path, rubric) -> None:
    """A new text height updates the pane's scrollbar without a layout pass of the
    screen (only a scrollbar appearing or going away asks for one): after every key,
    the scrollbars and scroll offsets equal what a layout pass from scratch gives."""
    path = tmp_path / "mixed.sqlite"
    with Workspace(path) as ws:
        ws.add_cases([make_case(i, long=i % 2 == 0) for i in range(8)])
        ws.save_subset("val", [f"c{i:04d}" for i in range(8)])
        app = _app(ws, rubric)
        keys = ["n", "pagedown", "n", "end", "n", "p", "p", "end", "n", "1", "2", "p", "n"]
        states = []
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
                state = _scroll_state(app)
                for pane in app.screen.query(TextPane):
                    pane.refresh(layout=True)
                await pilot.pause()
                assert _scroll_state(app) == state, f"scrollbars after {key!r}"
                states.append(state)
    shown = {pane: {s[pane][0] for s in states} for pane in states[0]}
    assert any(v == {True, False} for v in shown.values())  # bars came and went
