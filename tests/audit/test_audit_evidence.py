"""The audit passes the gate's evidence rules through: its options are checked where
they enter, and human labels count only under the audit's rubric version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.cases import LabelRecord, Workspace
from tiap.rubric import load_rubric


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--min-cases", "0", "--min-cases must be at least 1 (got 0)"),
        ("--min-cases", "1.5", "Invalid value for '--min-cases'"),
        ("--min-valid", "nan", "--min-valid must be a finite number in [0, 1] (got nan)"),
        ("--min-valid", "-0.1", "--min-valid must be a finite number in [0, 1]"),
        ("--min-decided", "2", "--min-decided must be a finite number in [0, 1] (got 2.0)"),
        ("--gate-on", "upper", "--gate-on must be one of point, lower (got 'upper')"),
    ],
)
def test_the_options_are_checked_before_anything_runs(
    tiap_cli, tmp_path: Path, sample_bundle_dir: Path, option: str, value: str, message: str
) -> None:
    out = tmp_path / "o"
    res = tiap_cli(
        "audit", sample_bundle_dir, "--out", out, "--panel", "offline", option, value,
        cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1
    assert message in lines[0]
    assert not out.exists()


def test_human_labels_of_another_rubric_version_do_not_count(
    tiap_cli, audit_waiting_8, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    out = audit_waiting_8.root / "audit"
    args = ("audit", sample_bundle_dir, "--out", out, "--panel", "offline", "--n", "8")
    lenient = ("--min-fleiss", "0", "--min-cases", "4", "--no-progress")
    first = audit_waiting_8.made  # tiap *args *lenient, run once per session
    assert first.returncode == 3, first.stderr  # waiting for human labels
    rubric = load_rubric()
    with Workspace(out / "workspace.sqlite", create=False) as ws:
        cases = ws.case_ids(subset="validation")
        # a person labelled every case, but under another version of the rubric
        ws.add_labels(
            [
                LabelRecord(
                    case_id=cid,
                    rater="ann",
                    rater_kind="human",
                    label="supports",
                    rubric_id=rubric.id,
                    rubric_hash="0" * 64,
                )
                for cid in cases
            ]
        )
    again = tiap_cli(*args, *lenient, cwd=tmp_path)
    assert again.returncode == 3, again.stderr
    assert "audit paused (waiting)" in again.stderr
    assert "tiap annotate tui" in again.stderr
    assert "not counted, made under another version of the rubric: ann 8" in again.stdout
    assert not (out / "validation" / "report.json").exists()
    # labelled again under the audit's version, the audit goes on to the gate
    with Workspace(out / "workspace.sqlite", create=False) as ws:
        ws.add_labels(
            [
                LabelRecord(
                    case_id=cid,
                    rater="ann",
                    rater_kind="human",
                    label="supports",
                    rubric_id=rubric.id,
                    rubric_hash=rubric.content_hash,
                )
                for cid in cases
            ]
        )
    gated = tiap_cli(*args, *lenient, cwd=tmp_path)
    assert "[5] human labels: done (complete: ann)" in gated.stdout, gated.stdout
    gate = json.loads((out / "validation" / "report.json").read_text())["gate"]
    assert gate["reference_rubric_hash"] == rubric.content_hash
    assert gate["no_humans"] is False


def test_the_audit_gates_on_the_lower_bound_when_asked(
    tiap_cli, audit_waiting_8, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    out = audit_waiting_8.root / "audit"
    args = ("audit", sample_bundle_dir, "--out", out, "--panel", "offline", "--n", "8")
    lenient = ("--min-fleiss", "-1", "--min-cases", "4", "--no-progress", "--no-humans")
    res = tiap_cli(*args, *lenient, "--gate-on", "lower", cwd=tmp_path)
    gate = json.loads((out / "validation" / "report.json").read_text(encoding="utf-8"))["gate"]
    assert gate["gate_on"] == "lower", res.stderr
    assert gate["figures"]["fleiss_ci"] is not None
    index = (out / "index.md").read_text(encoding="utf-8")
    assert "thresholds on the interval lower bounds" in index
