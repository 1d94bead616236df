"""The figures beyond kappa in the agreement report: Gwet's AC1 and the labels' base
rates beside every kappa (the kappa paradox on one table), and an ordinal rubric's
weighted kappa, AC2 and ordinal alpha, in report.json, report.md and report.html."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from support.browser import assert_renders
from tiap.agreement import CaseMeta, LabelEntry, LabelTable, RaterInfo, compute_report, write_report
from tiap.agreement import beyond_formulas as bf
from tiap.rubric import Rubric, load_rubric, parse_rubric

BUILTIN = Path(__file__).parents[2] / "src/tiap/rubric/builtin/contested-credit.toml"
ORDER = ["supports", "partial", "does_not_support"]


def _table(columns: dict[str, list[str | None]], kind: str = "judge") -> LabelTable:
    n = len(next(iter(columns.values())))
    cases = [CaseMeta(case_id=f"c{i:03d}", dataset=("a", "b")[i % 2]) for i in range(n)]
    raters = [RaterInfo(name=name, kind=kind) for name in columns]  # type: ignore[arg-type]
    labels = [
        LabelEntry(case_id=cases[i].case_id, rater=name, label=lab)
        for name, col in columns.items()
        for i, lab in enumerate(col)
    ]
    return LabelTable(cases=cases, raters=raters, labels=labels)


def _paradox() -> LabelTable:
    # [[90, 5], [4, 1]]: rows rater a, columns rater b (yes, no)
    cells = [("yes", "yes")] * 90 + [("yes", "no")] * 5 + [("no", "yes")] * 4 + [("no", "no")]
    return _table({"a": [x for x, _ in cells], "b": [y for _, y in cells]})


def _ordinal() -> Rubric:
    text = BUILTIN.read_text(encoding="utf-8")
    return parse_rubric(
        text.replace(
            'binary_positive = "relevant"', 'binary_positive = "relevant"\nordinal = true'
        ),
        "ordinal.toml",
    )


def _ordinal_table(seed: int = 3, n: int = 60) -> tuple[LabelTable, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    codes = np.where(rng.random((n, 3)) < 0.7, truth[:, None], rng.integers(0, 3, (n, 3)))
    columns = {f"j{r}": [ORDER[c] for c in codes[:, r]] for r in range(3)}
    return _table(columns), codes


def test_the_kappa_paradox_in_a_report(tmp_path: Path) -> None:
    # kappa 0.1346 and AC1 0.8996 on one table (hand-worked in beyond_formulas' doc)
    report = compute_report(_paradox(), None, resamples=200)
    pair = report.cohen_kappa[0]
    assert pair.kappa == pytest.approx(0.1346, abs=5e-5)
    assert report.gwet_ac1["labels"].value == pytest.approx(0.89956, abs=5e-6)
    ci = report.gwet_ac1["labels"].ci
    assert ci is not None
    assert ci[0] < 0.89956 < ci[1]
    # base rates: "yes" (95 + 94) / 200, "no" 11 / 200
    assert pair.base_rates == pytest.approx({"no": 0.055, "yes": 0.945})
    assert report.base_rates["labels"] == pytest.approx({"no": 0.055, "yes": 0.945})
    assert report.ordinal is None
    write_report(report, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["gwet_ac1"]["labels"]["value"] == pytest.approx(0.89956, abs=5e-6)
    assert data["ordinal"] is None
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| Gwet's AC1 | 0.900 \\[" in md
    assert "| Base rates of the labels | no 5.5%, yes 94.5% |" in md
    assert "| a | b | 100 | 0.135 \\[" in md
    assert "kappa paradox" in md
    assert "Ordered labels" not in md


def test_an_ordinal_rubric_adds_weighted_kappa_ac2_and_ordinal_alpha(tmp_path: Path) -> None:
    table, codes = _ordinal_table()
    report = compute_report(table, _ordinal(), resamples=200)
    o = report.ordinal
    assert o is not None
    assert report.rubric is not None
    assert report.rubric.ordinal
    assert o.order == ORDER
    expected_alpha = krippendorff.alpha(
        reliability_data=codes.T.astype(float),
        level_of_measurement="ordinal",
        value_domain=[0, 1, 2],
    )
    assert o.krippendorff_alpha.value == pytest.approx(expected_alpha, abs=1e-12)
    first = o.weighted_kappa[0]
    assert (first.a, first.b) == ("j0", "j1")
    expected = cohen_kappa_score(codes[:, 0], codes[:, 1], weights="quadratic", labels=[0, 1, 2])
    assert first.kappa.value == pytest.approx(expected, abs=1e-12)
    assert len(o.weighted_kappa) == 3
    for weighting in ("linear", "quadratic"):
        f = o.gwet_ac2[weighting]  # type: ignore[index]
        assert f.value is not None
        assert f.ci is not None
        assert f.ci[0] <= f.value <= f.ci[1]
    # the report's AC2 is the formula checked against Gwet's examples, on the same codes
    expected_ac2 = bf.point(bf.gwet_stat(codes, 3, "quadratic"))
    assert o.gwet_ac2["quadratic"].value == pytest.approx(expected_ac2, abs=1e-12)
    assert o.gwet_ac2["quadratic"].value != report.gwet_ac1["labels"].value
    write_report(report, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert set(data["ordinal"]) == {
        "order",
        "gwet_ac2",
        "krippendorff_alpha",
        "weighted_kappa",
        "weighted_kappa_vs_reference",
    }
    assert data["rubric"]["ordinal"] is True
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Ordered labels" in md
    assert "Order, first to last: supports, partial, does_not_support" in md
    assert f"| j0 | j1 | {expected:.3f} \\[" in md


def test_the_unordered_rubric_has_no_ordinal_figures() -> None:
    table, _ = _ordinal_table(n=20)
    report = compute_report(table, load_rubric("contested-credit"), resamples=0)
    assert report.ordinal is None
    assert report.rubric is not None
    assert report.rubric.ordinal is False
    assert set(report.gwet_ac1) == {"labels", "binary"}


def test_ac1_against_the_reference_beside_its_kappa() -> None:
    table, codes = _ordinal_table(n=40)
    human = [ORDER[c] for c in codes[:, 0]]
    cases = table.cases
    table = LabelTable(
        cases=cases,
        raters=[*table.raters, RaterInfo(name="h", kind="human")],
        labels=[
            *table.labels,
            *(
                LabelEntry(case_id=c.case_id, rater="h", label=lab)
                for c, lab in zip(cases, human, strict=True)
            ),
        ],
    )
    report = compute_report(table, _ordinal(), resamples=0)
    vs = report.vs_reference.raters[0]
    assert vs.rater == "j0"
    # j0 is the reference's own labels: AC1 1, every base rate the reference's shares
    assert vs.labels.ac1 is not None
    assert vs.labels.ac1.value == pytest.approx(1.0)
    shares = np.bincount(codes[:, 0], minlength=3) / 40
    assert list(vs.labels.base_rates.values()) == pytest.approx(list(shares))
    assert report.ordinal is not None
    assert report.ordinal.weighted_kappa_vs_reference["j0"].value == pytest.approx(1.0)
    assert "majority" in report.ordinal.weighted_kappa_vs_reference


def test_the_html_report_with_its_new_figures_renders(tmp_path: Path) -> None:
    table, _ = _ordinal_table()
    report = compute_report(table, _ordinal(), resamples=100)
    write_report(report, tmp_path / "out")
    page = tmp_path / "out" / "report.html"
    html = page.read_text(encoding="utf-8")
    assert "Chance-corrected agreement" in html
    assert "Gwet&#x27;s AC2, quadratic (labels)" in html or "Gwet's AC2, quadratic" in html
    shown = assert_renders(page, tmp_path / "beyond.png", min_figures=3)
    assert any("chance-corrected" in box.label.lower() for box in shown.svgs)
