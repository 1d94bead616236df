"""The scale gate records the anchor set frozen with it: frozen on its subset, under
its rubric, from the labels its judges gave with the settings it saw."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tiap.agreement import compute_report, labels_from_workspace, write_report_and_record_gate
from tiap.cases import LabelRecord, Workspace
from tiap.cases.events import GateEvent, read_events
from tiap.judge import load_panel, run_panel
from tiap.probe import freeze_anchor
from tiap.rubric import load_rubric

N = 12


def _gate(ws: Workspace, out: Path) -> GateEvent:
    table = labels_from_workspace(ws, subset="val")
    report = compute_report(table, load_rubric("contested-credit"), resamples=0, min_cases=5)
    assert write_report_and_record_gate(report, out, ws).gate_event is not None
    return read_events(ws, GateEvent)[-1]


def test_the_gate_names_the_anchor_set_frozen_from_its_evidence(
    make_workspace: Callable[..., Path], tmp_path: Path
) -> None:
    panel, rubric = load_panel("offline"), load_rubric("contested-credit")
    with Workspace(make_workspace(N)) as ws:
        run_panel(ws, panel, rubric, subset="val")
        assert _gate(ws, tmp_path / "r0").anchor is None  # nothing frozen yet
        ws.save_subset("few", ["c0000", "c0001"], params={"kind": "validation"})
        freeze_anchor(ws, "other-subset", panel, rubric, subset="few")
        assert _gate(ws, tmp_path / "r1").anchor is None  # frozen on another subset
        freeze_anchor(ws, "a1", panel, rubric, subset="val")
        freeze_anchor(ws, "a2", panel, rubric, subset="val")
        assert _gate(ws, tmp_path / "r2").anchor == "a2"  # the newest that matches
        # a judge's settings changed since the freeze: its labels are not the gate's
        ws.add_label(
            LabelRecord(
                case_id="c0000",
                rater="key-facts",
                rater_kind="judge",
                label="partial",
                rubric_id=rubric.id,
                rubric_hash=rubric.content_hash,
                model="offline/other",
                settings_hash="0" * 64,
            )
        )
        changed = _gate(ws, tmp_path / "r3")
        assert "0" * 64 in (changed.judge("key-facts").settings_hashes or [])
        assert changed.anchor is None
        freeze_anchor(ws, "a3", panel, rubric, subset="val")  # frozen from the labels now
        assert _gate(ws, tmp_path / "r4").anchor == "a3"
