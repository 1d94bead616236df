"""Agreement figures counted as the paper counts them (Tables 6 and 14, and the
validation kappa over the judges and the human), worked by hand on six cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from agreement_support import add_labels, validation_workspace

from tiap.agreement.compute import compute_report
from tiap.agreement.label_table import labels_from_workspace
from tiap.agreement.sections import render_markdown
from tiap.rubric import load_rubric

S, P, D = "supports", "partial", "does_not_support"
# four judges per case (None: an invalid output, "-": no label) and the human
JUDGES = {
    "j1": [S, S, S, D, None, P],
    "j2": [S, S, P, D, None, P],
    "j3": [S, P, D, P, None, P],
    "j4": [S, P, None, "-", None, S],
}
HUMAN = [S, P, D, D, S, P]


@pytest.fixture
def report(tmp_path: Path):
    rubric = load_rubric("contested-credit")
    ws = validation_workspace(tmp_path / "w.sqlite", 6)
    with ws:
        for rater, labels in JUDGES.items():
            add_labels(ws, rater, labels, rubric=rubric)
        add_labels(ws, "ann", HUMAN, kind="human", rubric=rubric)
        table = labels_from_workspace(ws, subset="validation")
    return compute_report(table, rubric, resamples=200)


def test_plurality_counts_every_case_and_breaks_ties_toward_less_credit(report) -> None:
    pv = report.paper.plurality["labels"]
    # c1 S-S-P-P and c2 S-P-D tie: partial and does_not_support win; c4: no valid label
    assert pv.counts == {S: 1, P: 2, D: 2, "no_valid_label": 1}
    assert pv.n_cases == 6
    assert pv.n_ties_broken == 2
    assert sum(v for v in pv.shares.values() if v is not None) == pytest.approx(1.0)
    # tiap's strict majority leaves the ties undecided
    assert report.majority.labels.counts[S] == 1
    binary = report.paper.plurality["binary"]
    assert sum(binary.counts.values()) == 6


def test_percent_agreement_on_complete_cases(report) -> None:
    c = report.paper.complete_case_agreement["labels"]
    # complete: c0, c1, c5; pairs of four judges agree on 3, 2, 1, 2, 1, 2 of 3
    assert (c.n, c.n_cases) == (3, 6)
    assert c.value == pytest.approx(11 / 18)
    assert c.ci is not None
    assert c.ci[0] <= c.value <= c.ci[1]
    # the pairwise-deletion figure uses every pair's common valid cases
    assert report.percent_agreement["labels"].value != pytest.approx(c.value)


def test_fleiss_over_judges_and_reference_matches_statsmodels(report) -> None:
    sm = pytest.importorskip("statsmodels.stats.inter_rater")
    fk = report.paper.fleiss_judges_and_reference["labels"]
    assert fk.raters == ["j1", "j2", "j3", "j4", "ann"]
    order = {S: 0, P: 1, D: 2}
    rows = [
        [order[JUDGES[j][i]] for j in JUDGES] + [order[HUMAN[i]]]
        for i in range(6)
        if all(JUDGES[j][i] in order for j in JUDGES)
    ]
    table, _ = sm.aggregate_raters(np.array(rows), n_cat=3)
    assert fk.n == len(rows) == 3
    assert fk.value == pytest.approx(sm.fleiss_kappa(table, method="fleiss"), abs=1e-12)
    # the gate's kappa is over the judges alone: another figure
    assert report.fleiss_kappa["labels"].value != pytest.approx(fk.value)


def test_the_markdown_labels_each_figure(report) -> None:
    md = render_markdown(report)
    assert "## As the paper counts (Tables 6 and 14)" in md
    assert "| no_valid_label | 1 |" in md
    assert "Percent agreement on complete cases (labels; every included rater valid, 3 of 6" in md
    assert "pairwise deletion (tiap):" in md
    assert (
        "Fleiss' kappa over the judges and the human reference (labels; j1, j2, j3, j4, ann" in md
    )


def test_no_reference_figure_without_human_labels(tmp_path: Path) -> None:
    rubric = load_rubric("contested-credit")
    with validation_workspace(tmp_path / "w.sqlite", 6) as ws:
        for rater, labels in JUDGES.items():
            add_labels(ws, rater, labels, rubric=rubric)
        table = labels_from_workspace(ws, subset="validation")
    rep = compute_report(table, rubric, resamples=0)
    assert rep.paper is not None
    assert rep.paper.fleiss_judges_and_reference is None
    assert "Fleiss' kappa over the judges and the human reference" not in render_markdown(rep)
