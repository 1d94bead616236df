"""A rater whose valid labels are all one label is flagged as constant: in
report.json, report.md, the summary lines and the gate's failure text."""

from __future__ import annotations

import json
from pathlib import Path

from agreement_support import add_labels

from tiap.agreement import compute_report, labels_from_workspace, write_report
from tiap.agreement.constant import constant_label
from tiap.agreement.report_text import summary_lines
from tiap.cases.workspace import Workspace
from tiap.rubric import Rubric

S, P, D = "supports", "partial", "does_not_support"
TRUTH = [S, S, P, D, D, P, S, D, P, S, D, S]


def test_constant_label_needs_two_valid_labels_all_the_same() -> None:
    import numpy as np

    cats = [S, P, D]
    assert constant_label(np.array([2, 2, -1, 2, -2]), cats) == D
    assert constant_label(np.array([2, 1, 2]), cats) is None
    assert constant_label(np.array([2, -1, -2]), cats) is None  # one valid label
    assert constant_label(np.array([-1, -1]), cats) is None


def test_a_constant_judge_is_flagged_everywhere(
    workspace: Workspace, rubric: Rubric, tmp_path: Path
) -> None:
    for j in range(3):
        add_labels(workspace, f"judge-{j}", TRUTH)
    add_labels(workspace, "weak", [D] * 11 + [None])  # one invalid output
    add_labels(workspace, "lenient", [S if x == S else P for x in TRUTH])  # binary: all relevant
    add_labels(workspace, "alice", TRUTH, kind="human")
    report = compute_report(labels_from_workspace(workspace, subset="validation"), rubric)
    raters = {r.name: r for r in report.raters}
    assert raters["weak"].constant is True
    assert raters["weak"].constant_label == D
    assert raters["weak"].counts == {S: 0, P: 0, D: 11}
    assert raters["lenient"].constant is False
    assert raters["lenient"].constant_binary is True
    assert not any(raters[n].constant or raters[n].constant_binary for n in ("judge-0", "alice"))
    # its agreement with the reference is 0 or undefined by construction: said so
    weak_vs_ref = next(v for v in report.vs_reference.raters if v.rater == "weak")
    assert weak_vs_ref.labels.kappa.value in (0.0, None)
    notes = " | ".join(report.notes)
    assert "constant rater weak: all 11 valid labels are 'does_not_support'" in notes
    assert "kappa undefined or 0 by construction" in notes
    assert "constant rater lenient on the binary scale" in notes
    assert not report.gate.passed
    assert any(
        f.startswith("judge weak is a constant rater (every valid label 'not_relevant')")
        for f in report.gate.failures
    )
    assert any("judge lenient is a constant rater" in f for f in report.gate.failures)
    lines = summary_lines(report)
    assert "labels of weak (judge): supports 0, partial 0, does_not_support 11, 1 invalid" in lines
    assert (
        "constant rater: weak gave 'does_not_support' to all 11 cases it labelled validly "
        "(kappa undefined or 0 by construction)"
    ) in lines
    write_report(report, tmp_path / "r")
    data = json.loads((tmp_path / "r" / "report.json").read_text(encoding="utf-8"))
    weak = next(r for r in data["raters"] if r["name"] == "weak")
    assert (weak["constant"], weak["constant_label"]) == (True, D)
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "constant rater weak" in md
    assert "FAILED: judge weak is a constant rater" in md


def test_varied_raters_are_not_flagged(workspace: Workspace, rubric: Rubric) -> None:
    for j in range(3):
        add_labels(workspace, f"judge-{j}", TRUTH)
    # a twelve-case subset, deliberately: --min-cases 6 (half of it)
    table = labels_from_workspace(workspace, subset="validation")
    report = compute_report(table, rubric, min_cases=6)
    assert report.gate.passed
    assert not any(r.constant or r.constant_binary for r in report.raters)
    assert not any("constant" in n for n in report.notes)
    assert not any("constant" in f for f in report.gate.failures)
