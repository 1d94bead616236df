"""Agreement reports and label exports count the live cases of one bundle version:
the report says which (report.json ``source.bundle_version``), and labels retired
with their cases are neither figures nor exported rows; the labelling queue leaves
retired cases out too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.agreement import compute_report, labels_from_workspace, write_report
from tiap.agreement.label_export import export_labels
from tiap.annotate.session import AnnotationSession
from tiap.cases import LabelRecord, Workspace
from tiap.cases.extract import extract_cases
from tiap.cases.sample import sample_subset
from tiap.errors import TiapError
from tiap.rubric import load_rubric
from tiap.traces.bundle import read_bundle
from version_support import copy_bundle, rewrite_memory


def test_reports_exports_and_the_queue_leave_retired_cases_out(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    rubric = load_rubric()
    bundle = copy_bundle(sample_bundle_dir, tmp_path / "b")
    with Workspace(tmp_path / "w.sqlite") as ws:
        extract_cases(read_bundle(bundle), ws)
        old = set(ws.case_ids())
        sample_subset(ws, name="val", n=6, overlap=0)
        for cid in old:
            ws.add_label(
                LabelRecord(case_id=cid, rater="ann", rater_kind="human", label="supports")
            )
            ws.add_label(LabelRecord(case_id=cid, rater="jj", rater_kind="judge", label="partial"))
        first = ws.cases()[0]
        rewrite_memory(bundle, first.store, first.memory_id, "A new text.")
        change = extract_cases(read_bundle(bundle), ws, replace_stale=True).version
        assert change is not None
        assert change.retired
        live = set(ws.case_ids())
        kept = live & old - {v.case_id for v in ws.retired_case_versions()}
        assert kept
        assert len(kept) < len(live)

        table = labels_from_workspace(ws)
        assert set(table.case_ids) == live
        assert {e.case_id for e in table.labels} == kept
        report = compute_report(table, rubric, resamples=0)
        assert report.n_cases == len(live)
        assert report.source.bundle_version == change.fingerprint
        write_report(report, tmp_path / "out")
        data = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
        assert data["source"]["bundle_version"] == change.fingerprint
        md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
        assert f"cases of bundle version {change.fingerprint[:12]}" in md

        for latest in (True, False):
            out = tmp_path / f"labels-{latest}.jsonl"
            summary = export_labels(ws, out, latest=latest)
            rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
            assert {r["case_id"] for r in rows} == kept
            assert summary.rows == 2 * len(kept)

        session = AnnotationSession(ws, rubric, "bob")
        assert set(session.case_ids) == live
        with pytest.raises(TiapError, match="subset 'val' is stale"):
            AnnotationSession(ws, rubric, "bob", subset="val")
        with pytest.raises(TiapError, match="is stale"):
            labels_from_workspace(ws, subset="val")
