"""The labelling rules behind the terminal app, without the app."""

from __future__ import annotations

import sqlite3

import pytest
from annotate_support import human_label, judge_label

from tiap.annotate.session import ADJUDICATED, AnnotationSession
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError


def _latest(ws: Workspace, rater: str) -> dict[str, str | None]:
    return {r.case_id: r.label for r in ws.latest_labels(raters=[rater])}


def test_label_commits_before_returning(ws, ws_path, rubric) -> None:
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    s.label("partial")
    # a second, independent connection sees the row: it is committed
    other = sqlite3.connect(ws_path)
    rows = other.execute(
        "SELECT case_id, rater, rater_kind, label, origin, rubric_id, rubric_hash FROM labels"
    ).fetchall()
    other.close()
    assert rows == [("c0000", "alice", "human", "partial", "tui", rubric.id, rubric.content_hash)]


def test_advance_goes_to_next_unlabelled_and_wraps(ws, rubric) -> None:
    ws.add_label(human_label("c0002", "alice", "supports"))
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    assert s.position == 0
    s.label("supports")
    assert s.advance()
    assert s.case_id == "c0001"
    s.label("supports")
    assert s.advance()
    assert s.case_id == "c0003"
    s.jump("10")
    s.label("partial")
    assert s.advance()
    assert s.case_id == "c0003"
    assert s.progress().done == 4
    assert s.progress().counts == {"supports": 3, "partial": 1, "does_not_support": 0}


def test_advance_stays_when_everything_is_labelled(ws, rubric) -> None:
    for i in range(10):
        ws.add_label(human_label(f"c{i:04d}", "alice", "supports"))
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    assert s.position == 0  # all done: start at the beginning
    assert s.advance() is False
    assert s.position == 0


def test_undo_restores_previous_label_then_retracts(ws, rubric) -> None:
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    s.label("supports")  # c0000: none -> supports
    s.jump("c0000")
    s.label("partial")  # c0000: supports -> partial
    s.jump("5")
    step = s.undo()
    assert step is not None
    assert step.case_id == "c0000"
    assert s.case_id == "c0000"  # the cursor goes back to the case
    assert _latest(ws, "alice") == {"c0000": "supports"}
    s.undo()
    assert _latest(ws, "alice") == {}  # withdrawn: latest row is a retraction
    assert s.my_label("c0000") is None
    assert s.undo() is None
    history = [(r.label, r.reason, r.origin) for r in ws.label_history("c0000", "alice")]
    assert history == [
        ("supports", None, "tui"),
        ("partial", None, "tui"),
        ("supports", None, "tui-undo"),
        (None, "retracted", "retract"),
    ]


def test_note_pending_then_attached_then_new_row(ws, rubric) -> None:
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    assert s.note("  tricky date  ") is None  # not labelled yet: kept for the label
    assert s.pending_note() == "tricky date"
    rec = s.label("partial")
    assert rec.note == "tricky date"
    assert s.pending_note("c0000") is None
    s.jump("1")
    again = s.note("changed my mind about the date")
    assert again is not None
    assert again.label == "partial"
    rows = ws.label_history("c0000", "alice")
    assert [(r.label, r.note) for r in rows] == [
        ("partial", "tricky date"),
        ("partial", "changed my mind about the date"),
    ]


def test_panel_labels_hidden_until_labelled(ws, rubric) -> None:
    ws.add_labels(
        [
            judge_label("c0000", "judge-a", "partial"),
            judge_label("c0000", "judge-b", None, "not_json"),
            human_label("c0000", "bob", "supports"),
            judge_label("c0001", "judge-a", "supports"),
        ]
    )
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    with pytest.raises(TiapError, match="label this case first"):
        s.panel_labels()
    s.label("does_not_support")
    panel = {(r.rater, r.label) for r in s.panel_labels("c0000")}
    assert panel == {("judge-a", "partial"), ("judge-b", None), ("bob", "supports")}


def test_resume_at_first_unlabelled_and_retracted_counts_as_unlabelled(ws, rubric) -> None:
    for cid in ("c0000", "c0001", "c0003"):
        ws.add_label(human_label(cid, "alice", "supports"))
    ws.retract_label("c0001", "alice")
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    assert s.case_id == "c0001"
    assert s.progress().done == 2


def test_overlap_only_queue(ws, rubric) -> None:
    s = AnnotationSession(ws, rubric, "bob", subset="val", overlap_only=True)
    assert s.case_ids == ["c0000", "c0001", "c0002", "c0003"]
    with pytest.raises(TiapError, match="--overlap needs --subset"):
        AnnotationSession(ws, rubric, "bob", overlap_only=True)


def test_adjudication_queue_and_storage(ws, rubric) -> None:
    ws.add_labels(
        [
            human_label("c0000", "alice", "supports"),
            human_label("c0000", "bob", "supports"),  # agree
            human_label("c0001", "alice", "supports"),
            human_label("c0001", "bob", "partial"),  # disagree
            human_label("c0002", "alice", "partial"),
            human_label("c0002", "bob", "does_not_support"),  # disagree
            human_label("c0003", "alice", "partial"),  # one rater only
            human_label("c0005", "alice", "supports"),
            human_label("c0005", "bob", "partial"),  # disagree, but not in the overlap
            judge_label("c0000", "judge-a", "partial"),  # judges never count
        ]
    )
    s = AnnotationSession(ws, rubric, "carol", subset="val", adjudicate=True)
    assert s.case_ids == ["c0001", "c0002"]
    assert {(r.rater, r.label) for r in s.disputed_labels()} == {
        ("alice", "supports"),
        ("bob", "partial"),
    }
    rec = s.label("partial")
    assert (rec.rater, rec.note, rec.rater_kind) == (ADJUDICATED, "adjudicator: carol", "human")
    s.advance()
    s.note("bob is right")
    rec = s.label("does_not_support")
    assert rec.note == "adjudicator: carol | bob is right"
    # a new adjudication session finds everything done; without a subset the
    # non-overlap disagreement (c0005) is in the queue too
    again = AnnotationSession(ws, rubric, "carol", subset="val", adjudicate=True)
    assert again.progress().done == 2
    everywhere = AnnotationSession(ws, rubric, "carol", adjudicate=True)
    assert everywhere.case_ids == ["c0001", "c0002", "c0005"]
    assert everywhere.case_id == "c0005"


def test_rater_names_are_checked(ws, rubric) -> None:
    ws.add_label(judge_label("c0000", "judge-a", "partial"))
    with pytest.raises(TiapError, match="reserved"):
        AnnotationSession(ws, rubric, ADJUDICATED)
    with pytest.raises(TiapError, match="name of a judge"):
        AnnotationSession(ws, rubric, "judge-a")
    with pytest.raises(TiapError, match="non-empty"):
        AnnotationSession(ws, rubric, "  ")
    s = AnnotationSession(ws, rubric, "alice")
    with pytest.raises(TiapError, match="not a label"):
        s.label("maybe")
    with pytest.raises(TiapError, match="no position 11"):
        s.jump("11")
    with pytest.raises(TiapError, match="no case 'nope'"):
        s.jump("nope")


def test_cases_are_loaded_by_id_not_all_at_once(ws, rubric) -> None:
    s = AnnotationSession(ws, rubric, "alice", subset="val")
    with ws.traced() as statements:
        for _ in range(3):
            assert s.current.case_id == s.case_id
            s.label("supports")
            s.advance()
    case_reads = [q for q in statements if "FROM cases" in q]
    assert case_reads
    assert all("WHERE case_id" in q for q in case_reads)
    assert len(case_reads) == 3
