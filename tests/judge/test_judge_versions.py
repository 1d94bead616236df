"""Judging and the gate across bundle versions: a run never judges retired cases,
and a gate passed on the cases of one bundle version does not let a panel judge the
cases of another."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.agreement import compute_report, labels_from_workspace, write_report_and_record_gate
from tiap.cases import Workspace
from tiap.cases.events import GateEvent, read_events, record_event
from tiap.cases.extract import extract_cases
from tiap.cases.sample import sample_subset
from tiap.errors import TiapError
from tiap.judge import load_panel, plan_run, run_panel
from tiap.rubric import load_rubric
from tiap.traces.bundle import read_bundle
from version_support import copy_bundle, rewrite_derived_texts


def _gate(ws: Workspace, out: Path) -> GateEvent:
    """Judge the validation subset with the offline panel and record a passing gate
    (thresholds any figure of these small subsets meets)."""
    panel, rubric = load_panel("offline"), load_rubric()
    run_panel(ws, panel, rubric, subset="validation")
    report = compute_report(
        labels_from_workspace(ws, subset="validation"),
        rubric,
        resamples=0,
        min_fleiss=-1.0,
        min_cases=3,  # the subsets here are deliberately small
    )
    assert report.gate.passed
    write_report_and_record_gate(report, out, ws)
    return read_events(ws, GateEvent)[-1]


def test_a_gate_holds_only_for_the_bundle_version_it_saw(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    panel, rubric = load_panel("offline"), load_rubric()
    bundle = copy_bundle(sample_bundle_dir, tmp_path / "b")
    with Workspace(tmp_path / "w.sqlite") as ws:
        first = extract_cases(read_bundle(bundle), ws).version
        sample_subset(ws, name="validation", n=6, overlap=0)
        event = _gate(ws, tmp_path / "r1")
        assert first is not None
        assert event.bundle_fingerprint == first.fingerprint
        assert plan_run(ws, panel, rubric).gate.check.passed  # type: ignore[union-attr]

        rewrite_derived_texts(bundle)
        moved = extract_cases(read_bundle(bundle), ws, replace_stale=True).version
        assert moved is not None
        # the subset is stale, and the gate on it does not hold
        with pytest.raises(TiapError, match="subset validation is stale"):
            plan_run(ws, panel, rubric)
        # drawn again, the subset is of the new version; the gate saw the old one
        sample_subset(ws, name="validation", n=6, overlap=0, replace=True)
        with pytest.raises(TiapError) as refused:
            plan_run(ws, panel, rubric)
        assert f"the gate saw cases of bundle version {first.fingerprint[:12]}" in str(
            refused.value
        )
        assert moved.fingerprint[:12] in str(refused.value)
        # a gate event of an earlier tiap says no version: it does not hold either
        record_event(ws, event.model_copy(update={"bundle_fingerprint": None}))
        with pytest.raises(TiapError, match="does not say which bundle version"):
            plan_run(ws, panel, rubric)
        # judged and reported again on the new version: the run covers the live cases only
        _gate(ws, tmp_path / "r2")
        plan = plan_run(ws, panel, rubric)
        live = set(ws.case_ids())
        assert plan.cases == len(live) == ws.count_cases()
        planned = {p.case.case_id for jp in plan.judges for p in jp.pairs}
        assert planned <= live
        assert all(
            p.case.memory_text.startswith("Rewritten: ") for jp in plan.judges for p in jp.pairs
        )
        retired = {v.case_id for v in ws.retired_case_versions()}
        assert retired == live  # every case's text changed: each was replaced


def test_a_stale_subset_is_not_judged(tmp_path: Path, sample_bundle_dir: Path) -> None:
    panel, rubric = load_panel("offline"), load_rubric()
    bundle = copy_bundle(sample_bundle_dir, tmp_path / "b")
    with Workspace(tmp_path / "w.sqlite") as ws:
        extract_cases(read_bundle(bundle), ws)
        sample_subset(ws, name="validation", n=6, overlap=0)
        rewrite_derived_texts(bundle)
        extract_cases(read_bundle(bundle), ws, replace_stale=True)
        with pytest.raises(TiapError, match="subset 'validation' is stale"):
            run_panel(ws, panel, rubric, subset="validation")
        assert ws.latest_labels() == []
