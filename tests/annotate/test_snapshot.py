"""Text snapshots of the main screen in an 80x24 terminal.

The expected screens are committed under ``snapshots/``. After a deliberate
change of the layout, regenerate them with
``TIAP_UPDATE_SNAPSHOTS=1 python -m pytest tests/annotate/test_snapshot.py``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from annotate_support import human_label, judge_label, screen_text

from tiap.annotate.session import AnnotationSession
from tiap.annotate.tui.app import AnnotateApp

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _check(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("TIAP_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"{path} is missing: run with TIAP_UPDATE_SNAPSHOTS=1 to create it")
    assert text == path.read_text(encoding="utf-8")


async def test_main_screen_80x24(ws, rubric) -> None:
    ws.add_label(judge_label("c0000", "oracle-judge", "partial"))
    app = AnnotateApp(AnnotationSession(ws, rubric, "alice", subset="val"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    lines = text.splitlines()
    assert len(lines) == 24
    assert all(len(line) <= 80 for line in lines)
    # everything a rater needs is on the first screen, the footer on the last row
    for needed in (
        "case 1/10",
        "Q When did",
        "A 7 May 2023",
        "Gold source evidence",
        "Credited memory",
        "rank 1 (1-5)",
        "Your label: none yet",
        " 1  supports",
    ):
        assert needed in text
    assert lines[-1].startswith("n next p prev u undo e note s skip / jump r reveal ? help q")
    _check("main_80x24.txt", text)


async def test_revealed_panel_80x24(ws, rubric) -> None:
    ws.add_labels(
        [judge_label("c0000", "oracle-judge", "partial"), human_label("c0000", "bob", "supports")]
    )
    app = AnnotateApp(AnnotationSession(ws, rubric, "alice", subset="val"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1", "p", "r")
        text = screen_text(app)
    assert "oracle-judge (judge): partial" in text
    _check("revealed_80x24.txt", text)
