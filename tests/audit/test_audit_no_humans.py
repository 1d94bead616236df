"""`tiap audit --no-humans` gates on judge agreement only, even when the workspace
holds human labels that disagree with the judges."""

from __future__ import annotations

import json
from pathlib import Path

from tiap.cases import LabelRecord, Workspace
from tiap.rubric import load_rubric

VS_HUMANS = "vs the human reference"


def _disagreeing_human_labels(db: Path) -> None:
    """A person labels every validation case with the binary opposite of the judges'
    majority: relevant where most judges say not relevant, and the other way round."""
    binary = load_rubric().binary
    with Workspace(db, create=False) as ws:
        cases = ws.case_ids(subset="validation")
        judged = ws.latest_labels(case_ids=cases, rater_kind="judge")
        for cid in cases:
            votes = [binary[r.label] for r in judged if r.case_id == cid and r.label]
            relevant = sum(v == "relevant" for v in votes) * 2 > len(votes)
            label = "does_not_support" if relevant else "supports"
            ws.add_label(LabelRecord(case_id=cid, rater="ann", rater_kind="human", label=label))


def test_no_humans_ignores_disagreeing_human_labels_for_the_gate(
    tiap_cli, audit_waiting_8, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    out = audit_waiting_8.root / "audit"
    args = ("audit", sample_bundle_dir, "--out", out, "--panel", "offline", "--n", "8")
    # an eight-case subset, deliberately: --min-cases 4 (half of it)
    lenient = ("--min-fleiss", "0", "--min-cases", "4", "--no-progress")
    paused = audit_waiting_8.made  # tiap *args *lenient, run once per session
    assert paused.returncode == 3, paused.stderr  # waiting for human labels
    db = out / "workspace.sqlite"
    _disagreeing_human_labels(db)

    # With humans required, these labels fail the gate on judge-vs-human kappa ...
    with_humans = tiap_cli(*args, *lenient, cwd=tmp_path)
    assert with_humans.returncode == 3, with_humans.stderr
    assert VS_HUMANS in with_humans.stderr
    report = json.loads((out / "validation/report.json").read_text())
    assert report["vs_reference"]["available"] is True
    assert any(VS_HUMANS in f for f in report["gate"]["failures"])

    # The gate's Fleiss' kappa over the judges and the human (the paper's five raters):
    # the choice is recorded with the verdict and shown on the index page
    five = tiap_cli(*args, *lenient, "--gate-raters", "judges+reference", cwd=tmp_path)
    assert five.returncode == 3, five.stderr
    gate = json.loads((out / "validation/report.json").read_text())["gate"]
    assert gate["gate_raters"] == "judges+reference"
    assert gate["fleiss_raters"][-1] == "ann"
    assert "Fleiss' kappa over the judges and the human reference)" in (out / "index.md").read_text(
        encoding="utf-8"
    )
    with Workspace(db, create=False) as ws:
        assert ws.events("gate")[-1]["gate_raters"] == "judges+reference"

    # ... with --no-humans the gate is on judge agreement only, and passes.
    judges_only = tiap_cli(*args, *lenient, "--no-humans", cwd=tmp_path)
    assert judges_only.returncode == 0, judges_only.stderr
    assert VS_HUMANS not in judges_only.stdout + judges_only.stderr
    for sub in ("validation", "final"):
        report = json.loads((out / sub / "report.json").read_text())
        assert not [f for f in report["gate"]["failures"] if VS_HUMANS in f]
        assert report["vs_reference"]["available"] is False
        assert "ann" not in report["included_raters"]
        assert "ann" not in {r["name"] for r in report["raters"]}
    gate = json.loads((out / "validation/report.json").read_text())["gate"]
    assert (gate["status"], gate["passed"], gate["failures"]) == ("PASS", True, [])
    assert gate["no_humans"] is True  # the choice is recorded with the verdict
    index = (out / "index.md").read_text(encoding="utf-8")
    assert "Scale gate: PASS" in index
    assert "Human labels in the workspace (ann) were left out" in index


def test_no_humans_with_a_reference_is_bad_input(
    tiap_cli, tmp_path: Path, sample_bundle_dir: Path
) -> None:
    res = tiap_cli(
        "audit",
        sample_bundle_dir,
        "--out",
        tmp_path / "o",
        "--panel",
        "offline",
        "--no-humans",
        "--reference",
        "ann",
        cwd=tmp_path,
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert "--no-humans" in res.stderr
    res = tiap_cli(
        "audit", sample_bundle_dir, "--out", tmp_path / "o", "--panel", "offline",
        "--no-humans", "--gate-raters", "judges+reference", cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert "judges+reference" in res.stderr
    assert not (tmp_path / "o").exists()
