"""Each judge's accuracy beside the constant predictor's, the judges' error correlation
and the majority against its best judge: by hand on small tables, and in the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from support.browser import assert_renders
from tiap.agreement import CaseMeta, LabelEntry, LabelTable, RaterInfo, compute_report, write_report
from tiap.agreement import reference_baselines as bl
from tiap.agreement.formulas import confusion_features
from tiap.rubric import load_rubric
from tiap.stats import paired_bootstrap

NAMES = ["supports", "partial", "does_not_support"]


def _sums(ref: list[int], codes: list[int], k: int) -> np.ndarray:
    return confusion_features(np.array(ref), np.array(codes), k).sum(axis=0)[None, :]


def test_margin_and_balanced_accuracy_by_hand() -> None:
    # reference 8 x "a", 2 x "b"; the rater right on 7 of the a's and 1 of the b's:
    # accuracy 8/10, constant predictor ("a") 8/10: margin 0. Balanced accuracy: recall
    # a 7/8, b 1/2 -> 0.6875; over 1/2: 0.1875
    ref = [0] * 8 + [1] * 2
    codes = [0] * 7 + [1] + [1, 0]
    s = _sums(ref, codes, 2)
    assert bl._margin(s, 2)[0] == pytest.approx(0.0)
    assert bl._balanced(s, 2)[0] == pytest.approx(0.6875)
    assert bl._balanced_margin(s, 2)[0] == pytest.approx(0.1875)
    # a constant rater ("a" always) has margin 0 and balanced accuracy exactly 1/2
    s = _sums(ref, [0] * 10, 2)
    assert bl._margin(s, 2)[0] == pytest.approx(0.0)
    assert bl._balanced(s, 2)[0] == pytest.approx(0.5)


def test_error_correlation_by_hand() -> None:
    # 10 cases; a wrong on 0-3, b wrong on 2-5: n_a = n_b = 4, n_ab = 2
    # phi = (10 x 2 - 16) / sqrt(4 x 6 x 4 x 6) = 4 / 24 = 1/6; ratio = 10 x 2 / 16 = 1.25
    ref = np.zeros(10, dtype=np.int64)
    a = np.where(np.arange(10) < 4, 1, 0)
    b = np.where((np.arange(10) >= 2) & (np.arange(10) < 6), 1, 0)
    s = bl._error_features(ref, a, b).sum(axis=0)[None, :]
    assert bl._phi(s)[0] == pytest.approx(1 / 6)
    assert bl._ratio(s)[0] == pytest.approx(1.25)
    assert bl._explain_errors(bl._error_features(ref, ref, b).sum(axis=0)) == (
        "a judge made no error against the reference"
    )


def _table(n: int = 80, seed: int = 2) -> LabelTable:
    """Three judges and one human; the judges err together on a third of their errors."""
    rng = np.random.default_rng(seed)
    names = ["supports", "partial", "does_not_support"]
    truth = rng.choice(3, size=n, p=[0.6, 0.25, 0.15])
    shared = rng.random(n) < 0.12
    cases = [CaseMeta(case_id=f"c{i:03d}", dataset="d") for i in range(n)]
    raters = [RaterInfo(name=f"j{j}", kind="judge") for j in range(3)]
    raters.append(RaterInfo(name="h", kind="human"))
    labels = [
        LabelEntry(case_id=c.case_id, rater="h", label=names[t])
        for c, t in zip(cases, truth, strict=True)
    ]
    for j in range(3):
        own = rng.random(n) < 0.1
        given = np.where(shared | own, (truth + 1) % 3, truth)
        labels += [
            LabelEntry(case_id=c.case_id, rater=f"j{j}", label=names[g])
            for c, g in zip(cases, given, strict=True)
        ]
    return LabelTable(cases=cases, raters=raters, labels=labels)


def test_the_report_shows_baselines_and_error_correlation(tmp_path: Path) -> None:
    table = _table()
    report = compute_report(table, load_rubric("contested-credit"), resamples=300)
    j0 = report.vs_reference.raters[0]
    assert j0.rater == "j0"
    conf = np.array(j0.labels.confusion)
    b = j0.labels.baseline
    assert b is not None
    assert b.majority_label == "supports"
    assert b.accuracy == pytest.approx(conf[0].sum() / conf.sum())
    assert b.balanced_accuracy == pytest.approx(1 / 3)
    assert b.classes == 3
    assert b.margin.value == pytest.approx((np.trace(conf) - conf.sum(axis=1).max()) / conf.sum())
    assert b.margin.ci is not None
    assert b.margin.ci[0] <= b.margin.value <= b.margin.ci[1]
    binary = j0.binary
    assert binary is not None
    assert binary.baseline is not None
    assert binary.baseline.balanced_accuracy == pytest.approx(0.5)
    # the judges share their errors on 12% of the cases: strongly correlated
    errors = report.judge_errors["labels"]
    assert [(x.a, x.b) for x in errors.error_correlation] == [
        ("j0", "j1"),
        ("j0", "j2"),
        ("j1", "j2"),
    ]
    first = errors.error_correlation[0]
    assert first.phi.value is not None
    assert first.phi.value > 0.3
    assert first.ratio.value is not None
    assert first.ratio.value > 2
    # the majority against its best judge, the difference's interval from paired_bootstrap
    m = errors.majority_vs_best
    assert m is not None
    ref = np.array([NAMES.index(x) for x in _human(table)])
    right = {
        name: np.array([NAMES.index(_label(table, name, c.case_id)) for c in table.cases]) == ref
        for name in ("j0", "j1", "j2")
    }
    best = max(right, key=lambda k: right[k].sum())
    assert m.best_judge == best
    assert m.judge_accuracy == pytest.approx(right[best].mean())
    majority = (
        np.array(report.vs_reference.majority.labels.confusion)
        if report.vs_reference.majority
        else None
    )
    assert majority is not None
    assert m.majority_accuracy == pytest.approx(np.trace(majority) / len(ref))
    diffs = np.array(
        [
            (1.0 if _majority_right(table, i, ref) else 0.0) - float(right[best][i])
            for i in range(len(ref))
        ]
    )
    expected = paired_bootstrap(diffs, resamples=300, seed=1337)
    assert m.difference.value == pytest.approx(diffs.mean())
    assert m.difference.ci == pytest.approx([float(expected.low[0]), float(expected.high[0])])
    write_report(report, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert set(data["vs_reference"]["raters"][0]["labels"]["baseline"]) == {
        "majority_label",
        "accuracy",
        "balanced_accuracy",
        "classes",
        "margin",
        "rater_balanced_accuracy",
        "balanced_margin",
    }
    assert set(data["judge_errors"]) == {"labels", "binary"}
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "### Beside the constant predictor" in md
    assert "### The judges' errors" in md
    assert f"Majority vs its best judge (labels): majority {m.majority_accuracy:.3f}" in md
    shown = assert_renders(tmp_path / "report.html", tmp_path / "baselines.png", min_figures=3)
    assert any("constant predictor" in box.label.lower() for box in shown.svgs)


def _human(table: LabelTable) -> list[str]:
    return [_label(table, "h", c.case_id) for c in table.cases]


def _label(table: LabelTable, rater: str, case_id: str) -> str:
    return next(e.label for e in table.labels if e.rater == rater and e.case_id == case_id) or ""


def _majority_right(table: LabelTable, i: int, ref: np.ndarray) -> bool:
    names = ["supports", "partial", "does_not_support"]
    votes = [names.index(_label(table, f"j{j}", table.cases[i].case_id)) for j in range(3)]
    top = max(set(votes), key=votes.count)
    return votes.count(top) >= 2 and top == ref[i]


def test_no_reference_no_baselines() -> None:
    table = _table(n=30)
    without = LabelTable(
        cases=table.cases,
        raters=[r for r in table.raters if r.name != "h"],
        labels=[e for e in table.labels if e.rater != "h"],
    )
    report = compute_report(without, load_rubric("contested-credit"), resamples=0)
    assert report.judge_errors == {}
    assert report.vs_reference.available is False
