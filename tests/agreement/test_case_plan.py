"""How many cases the gate's figures need: in every report with a gate (the analytic
variance for a judge's binary kappa, the bootstrap variance for Fleiss' kappa) and by
hand with ``tiap agreement plan``, every number checked where it enters."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from agreement_support import add_labels, validation_workspace

from support.browser import assert_renders
from tiap.agreement import compute_report, labels_from_workspace, write_report
from tiap.agreement import formulas as st
from tiap.agreement.case_plan import hand_plan
from tiap.agreement.estimates import evaluate
from tiap.cases.workspace import Workspace
from tiap.rubric import Rubric
from tiap.stats import Draws
from tiap.stats import sample_size as ss

S, P, D = "supports", "partial", "does_not_support"


def _workspace(path: Path) -> Path:
    """Forty validation cases, three judges and a human who mostly agree."""
    ws = validation_workspace(path, 40)
    ids = ws.case_ids(subset="validation")
    truth = [(S, D, P, D, S)[i % 5] for i in range(40)]

    def off(at: tuple[int, ...]) -> list[str]:
        return [(D if x != D else S) if i in at else x for i, x in enumerate(truth)]

    add_labels(ws, "judge-a", off((1, 7)), case_ids=ids)
    add_labels(ws, "judge-b", off((3,)), case_ids=ids)
    add_labels(ws, "judge-c", off((1, 12, 20)), case_ids=ids)
    add_labels(ws, "human-1", truth, kind="human", case_ids=ids)
    ws.close()
    return path


def test_the_bootstrap_sd_is_the_replicates_sd() -> None:
    rng = np.random.default_rng(4)
    codes = np.where(
        rng.random((60, 3)) < 0.8, rng.integers(0, 2, 60)[:, None], rng.integers(0, 2, (60, 3))
    )
    stat = st.fleiss_stat(codes, 2)
    est = evaluate({"f": stat}, Draws(60, 500, 9))["f"]
    replicates = np.concatenate(
        [stat.finish(c @ stat.features) for c in Draws(60, 500, 9).counts()]
    )
    replicates = replicates[np.isfinite(replicates)]
    assert est.sd == pytest.approx(float(replicates.std(ddof=1)), rel=1e-9)


def test_every_report_with_a_gate_plans_its_cases(tmp_path: Path, rubric: Rubric) -> None:
    db = _workspace(tmp_path / "ws.sqlite")
    with Workspace.open_readonly(db) as ws:
        report = compute_report(labels_from_workspace(ws, subset="validation"), rubric)
    plan = report.plan
    assert plan is not None
    assert plan.width == 0.2
    fleiss, *judges = plan.rows
    assert fleiss.figure == "fleiss_kappa"
    assert fleiss.variance_method == "bootstrap"
    assert fleiss.estimate == report.gate.figures.fleiss_kappa
    assert fleiss.variance is not None
    assert fleiss.variance > 0
    assert fleiss.cases_for_width == math.ceil(
        fleiss.variance * (2 * ss.normal_quantile() / 0.2) ** 2
    )
    assert [r.rater for r in judges] == ["judge-a", "judge-b", "judge-c"]
    a = judges[0]
    assert a.variance_method == "analytic"
    vs = report.vs_reference.raters[0]
    assert vs.binary is not None
    conf = np.array(vs.binary.confusion)
    p = (conf[0].sum() + conf[:, 0].sum()) / (2 * conf.sum())
    assert a.prevalence == pytest.approx(p)
    assert a.estimate is not None
    assert a.variance == pytest.approx(ss.cohen_kappa_variance(a.estimate, p))
    assert a.sd == pytest.approx(math.sqrt(a.variance / 40))
    assert a.cases_for_lower_bound == ss.cases_for_lower_bound(a.variance, a.estimate, 0.6)
    write_report(report, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert data["plan"]["rows"][1]["variance_method"] == "analytic"
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## How many cases the gate needs" in md
    assert f"| kappa of judge-a vs the reference | {a.estimate:.3f} | 0.600 | 40 |" in md
    shown = assert_renders(tmp_path / "out" / "report.html", tmp_path / "plan.png", min_figures=3)
    assert any("cases the gate" in box.label.lower() for box in shown.svgs)


def test_without_resamples_fleiss_has_no_plan_and_says_why(tmp_path: Path, rubric: Rubric) -> None:
    db = _workspace(tmp_path / "ws.sqlite")
    with Workspace.open_readonly(db) as ws:
        report = compute_report(labels_from_workspace(ws, subset="validation"), rubric, resamples=0)
    assert report.plan is not None
    fleiss = report.plan.rows[0]
    assert fleiss.variance is None
    assert fleiss.reason == "no bootstrap variance (--resamples 0, or too few resamples)"
    assert report.plan.rows[1].variance_method == "analytic"  # needs no resamples


def test_hand_plan() -> None:
    plan = hand_plan(0.7, 0.4, 2, width=0.2, threshold=0.6)
    (row,) = plan.rows
    assert row.variance == pytest.approx(0.53275)  # by hand in tiap.stats.sample_size
    assert (row.cases_for_width, row.cases_for_lower_bound) == (205, 205)
    fleiss = hand_plan(0.7, 0.4, 5, width=0.2, threshold=0.6).rows[0]
    assert fleiss.variance_method == "simulated"
    assert fleiss.variance == pytest.approx(ss.simulated_fleiss_variance(0.7, 0.4, 5))
    assert hand_plan(0.5, 0.4, 2, threshold=0.6).rows[0].cases_for_lower_bound is None


def test_the_plan_command(tiap_cli, capsys) -> None:
    result = tiap_cli(
        "agreement", "plan", "--kappa", "0.7", "--prevalence", "0.4", "--threshold", "0.6"
    )
    out = capsys.readouterr().out
    assert result.code == 0, out
    assert out == (
        "Cohen's kappa 0.700, prevalence 0.400, 2 raters: per-case variance 0.533 (analytic); "
        "205 cases for a 0.200-wide 95% interval; 205 cases for its lower bound to clear "
        "0.600\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kappa", "nan"], "--kappa must be a finite number"),
        (["--kappa", "1.5"], "--kappa must lie between -1 and 1"),
        (["--prevalence", "1"], "--prevalence must lie strictly between 0 and 1"),
        (["--raters", "1"], "--raters must be at least 2"),
        (["--width", "0"], "--width must be greater than 0"),
        (["--width", "inf"], "--width must be a finite number"),
        (["--threshold", "-3"], "--threshold must lie between -1 and 1"),
    ],
)
def test_plan_numbers_are_checked(tiap_cli, capsys, args: list[str], message: str) -> None:
    given = {"--kappa": "0.7", "--prevalence": "0.4", args[0]: args[1]}
    result = tiap_cli("agreement", "plan", *[x for kv in given.items() for x in kv])
    err = capsys.readouterr().err
    assert result.code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
