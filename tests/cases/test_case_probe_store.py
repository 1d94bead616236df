"""Probe labels and anchor sets: kept apart from the audit's labels, anchors frozen
for good; the typed probe and drift events; the gate's anchor."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from case_support import make_case, make_label

from tiap.cases.diagnostic_events import (
    DriftEvent,
    DriftStartEvent,
    ProbedJudge,
    ProbedKind,
    ProbeEvent,
    ProbeThresholds,
)
from tiap.cases.events import GateEvent, read_events, record_event
from tiap.cases.probe_models import AnchorCase, AnchorLabel, AnchorSet, ProbeLabelRecord, ProbeTag
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError


@pytest.fixture
def ws(tmp_path: Path):
    with Workspace(tmp_path / "w.sqlite") as w:
        w.add_cases([make_case("c1"), make_case("c2", query_index=1)])
        yield w


def _probe(case_id: str, rater: str, label: str | None, h: str, tag: ProbeTag) -> ProbeLabelRecord:
    base = make_label(case_id, rater, label, rater_kind="judge", rubric_hash="rh", request_hash=h)
    return ProbeLabelRecord.of(base, tag)


def test_probe_labels_are_apart_from_the_labels(ws: Workspace) -> None:
    ws.add_label(make_label("c1", "judge-a", "supports", rater_kind="judge", rubric_hash="rh"))
    repeat = ProbeTag(kind="repeat", variant="repeat:1", params={"index": 1, "of": 3})
    ws.add_probe_labels(
        [
            _probe("c1", "judge-a", "partial", "h1", repeat),
            _probe("c2", "judge-a", None, "h2", repeat),
            _probe("c1", "judge-a", "supports", "h1", repeat),  # newer wins
        ]
    )
    # the audit's reads see only the audit's label
    assert [(r.case_id, r.label) for r in ws.latest_labels()] == [("c1", "supports")]
    assert ws.raters() == ["judge-a"]
    latest = ws.latest_probe_labels("judge-a", ["h1", "h2", "h3"])
    assert {k: v.label for k, v in latest.items()} == {("c1", "h1"): "supports", ("c2", "h2"): None}
    record = latest[("c1", "h1")]
    assert (record.probe_kind, record.probe_variant, record.probe_params) == (
        "repeat",
        "repeat:1",
        {"index": 1, "of": 3},
    )
    first = ws.max_probe_label_id()
    assert ws.probe_labels_since("judge-a", "rh", ["c1", "c2"], 0) == {("c1", "h1"), ("c2", "h2")}
    assert ws.probe_labels_since("judge-a", "rh", ["c1", "c2"], first) == set()
    assert ws.probe_label_count(kind="repeat") == 3
    assert ws.probe_label_count(kind="order") == 0


def test_a_probe_label_keeps_the_rater_namespace(ws: Workspace) -> None:
    ws.add_label(make_label("c1", "ann", "supports"))
    tag = ProbeTag(kind="order", variant="order")
    with pytest.raises(TiapError, match="never both"):
        ws.add_probe_labels([_probe("c1", "ann", "partial", "h", tag)])
    with pytest.raises(TiapError, match="no such case"):
        ws.add_probe_labels([_probe("zz", "judge-a", "partial", "h", tag)])


def _anchor(name: str = "a1") -> tuple[AnchorSet, list[AnchorCase], list[AnchorLabel]]:
    anchor = AnchorSet(
        name=name,
        subset="val",
        rubric_id="r",
        rubric_hash="rh",
        panel="p",
        reference="human consensus",
        cases=2,
        judges=["judge-a"],
        created_at="t",
    )
    cases = [
        AnchorCase(anchor=name, case_id=c, position=i, text_hash="0" * 64, reference="supports")
        for i, c in enumerate(("c1", "c2"))
    ]
    labels = [
        AnchorLabel(anchor=name, case_id=c, rater="judge-a", label="partial", label_id=i + 1)
        for i, c in enumerate(("c1", "c2"))
    ]
    return anchor, cases, labels


def test_an_anchor_set_is_frozen_once_and_never_changed(ws: Workspace, tmp_path: Path) -> None:
    ws.freeze_anchor_set(*_anchor())
    assert ws.anchor_set("a1").judges == ["judge-a"]
    assert [c.case_id for c in ws.anchor_cases("a1")] == ["c1", "c2"]
    assert [lab.label for lab in ws.anchor_labels("a1")] == ["partial", "partial"]
    with pytest.raises(TiapError, match="frozen already"):
        ws.freeze_anchor_set(*_anchor())
    with pytest.raises(TiapError, match="no anchor set named 'zz' \\(known: a1"):
        ws.anchor_set("zz")
    raw = sqlite3.connect(tmp_path / "w.sqlite")
    with pytest.raises(sqlite3.IntegrityError, match="frozen"):
        raw.execute("UPDATE anchor_labels SET label = 'supports'")
    raw.close()
    assert ws.live_case_ids(["c1", "c9"]) == {"c1"}


def test_probe_and_drift_events_round_trip(ws: Workspace) -> None:
    kind = ProbedKind(kind="order", n=2, flips=1, flip_rate=0.5, flip_ci=[0.09, 0.91], status="x")
    probe = ProbeEvent(
        subset="val",
        panel="p",
        rubric_id="r",
        rubric_hash="rh",
        kinds=["order"],
        seed=1,
        thresholds=ProbeThresholds(max_injection=0.05, min_cases=20),
        judges=[
            ProbedJudge(name="j", model="m", settings_hash="s", verdict="stable", kinds=[kind])
        ],
    )
    record_event(ws, probe)
    start = record_event(ws, DriftStartEvent(anchor="a1", panel="p", rubric_hash="rh", judges=[]))
    drift = DriftEvent(
        run=start,
        anchor="a1",
        panel="p",
        rubric_hash="rh",
        max_p=0.05,
        ewma_lambda=0.3,
        ewma_l=3.0,
        judges=[],
    )
    record_event(ws, drift)
    assert read_events(ws, ProbeEvent)[0].judge("j") == probe.judges[0]
    assert read_events(ws, DriftEvent)[0].run == start
    assert read_events(ws, DriftStartEvent)[0].anchor == "a1"


def test_a_gate_event_of_an_earlier_tiap_has_no_anchor() -> None:
    payload = {
        "subset": "val",
        "panel": "p",
        "rubric_id": "r",
        "rubric_hash": "rh",
        "judges": [{"name": "j", "models": ["m"]}],
        "thresholds": {"min_fleiss": 0.8, "min_judge_kappa": 0.6},
        "figures": {
            "scale": "binary",
            "fleiss_kappa": 0.1,
            "fleiss_n": 3,
            "judge_kappa": {},
            "judge_n": {},
        },
        "passed": False,
        "failures": ["low"],
    }
    assert GateEvent.model_validate(payload).anchor is None
    assert GateEvent.model_validate({**payload, "anchor": "a1"}).anchor == "a1"
