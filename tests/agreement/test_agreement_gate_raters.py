"""``--gate-raters``: the gate's Fleiss' kappa over the judges alone (the default) or
over the judges and the human reference (the paper's validation kappa over five
raters), checked against statsmodels and a case worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from agreement_support import add_labels, random_codes, validation_workspace

from tiap.agreement import compute_report, labels_from_workspace, record_gate
from tiap.agreement.report_text import gate_rule
from tiap.agreement.sections import render_markdown
from tiap.agreement.write import write_report
from tiap.cases.events import GateEvent
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.judge import check_scale_gate
from tiap.rubric import Rubric

S, D = "supports", "does_not_support"
# Four judges and a human on four cases; on the binary scale supports is R, and
# does_not_support N.
#
#   case  j1 j2 j3 j4 | human
#   c0    R  R  R  R  | R
#   c1    N  N  N  N  | N
#   c2    R  R  R  N  | N
#   c3    R  R  N  N  | R
#
# Judges alone (m = 4): per-case agreement P_i = sum n_ij (n_ij - 1) / (m (m - 1)) is
# 1, 1, 6/12, 4/12, so P = 17/24; p_R = 9/16, p_N = 7/16, P_e = 130/256 = 65/128;
# kappa = (17/24 - 65/128) / (1 - 65/128) = (77/384) / (63/128) = 11/27 = 0.4074.
# With the human (m = 5): P_i = 1, 1, 8/20, 8/20, so P = 0.7; p_R = 11/20,
# p_N = 9/20, P_e = 202/400 = 0.505; kappa = 0.195 / 0.495 = 13/33 = 0.3939.
JUDGES = {
    "j1": [S, D, S, S],
    "j2": [S, D, S, S],
    "j3": [S, D, S, D],
    "j4": [S, D, D, D],
}
HUMAN = [S, D, D, S]
JUDGES_ALONE, FIVE_RATERS = 11 / 27, 13 / 33
# between the two kappas: the judges alone pass, the five raters do not
GATE = {"min_cases": 4, "min_fleiss": 0.40, "min_judge_kappa": -1.0, "resamples": 200}


@pytest.fixture
def ws(tmp_path: Path, rubric: Rubric):
    with validation_workspace(tmp_path / "w.sqlite", 4) as w:
        for rater, labels in JUDGES.items():
            add_labels(w, rater, labels, rubric=rubric)
        add_labels(w, "ann", HUMAN, kind="human", rubric=rubric)
        yield w


def _report(ws: Workspace, rubric: Rubric, **kw):
    return compute_report(labels_from_workspace(ws, subset="validation"), rubric, **GATE, **kw)


def test_the_hand_worked_case(ws: Workspace, rubric: Rubric) -> None:
    alone = _report(ws, rubric)
    assert alone.gate.gate_raters == "judges"
    assert alone.gate.fleiss_raters == ["j1", "j2", "j3", "j4"]
    assert alone.gate.figures.fleiss_kappa == pytest.approx(JUDGES_ALONE, abs=1e-12)
    assert alone.gate.passed

    five = _report(ws, rubric, gate_raters="judges+reference")
    assert five.gate.gate_raters == "judges+reference"
    assert five.gate.fleiss_raters == ["j1", "j2", "j3", "j4", "ann"]
    assert five.gate.figures.fleiss_kappa == pytest.approx(FIVE_RATERS, abs=1e-12)
    assert five.gate.figures.fleiss_n == 4
    ci = five.gate.figures.fleiss_ci
    assert ci is not None
    assert ci[0] <= FIVE_RATERS <= ci[1]
    assert not five.gate.passed
    assert any(
        "Fleiss' kappa over the judges and the human reference 0.394 < 0.40" in f
        for f in five.gate.failures
    )
    assert gate_rule(five.gate).endswith(
        "Fleiss' kappa over the judges and the human reference (--gate-raters judges+reference)"
    )
    assert gate_rule(alone.gate).endswith("Fleiss' kappa over the judges (--gate-raters judges)")
    # both figures are in the report whichever the gate uses
    for rep in (alone, five):
        p = rep.paper
        assert p is not None
        assert p.fleiss_judges is not None
        assert p.fleiss_judges_and_reference is not None
        assert p.fleiss_judges["binary"].value == pytest.approx(JUDGES_ALONE, abs=1e-12)
        assert p.fleiss_judges["binary"].raters == ["j1", "j2", "j3", "j4"]
        ref = p.fleiss_judges_and_reference["binary"]
        assert ref.value == pytest.approx(FIVE_RATERS, abs=1e-12)
        assert ref.n == 4
        assert ref.ci is not None


def _statsmodels_fleiss(codes: np.ndarray, k: int) -> tuple[float, int]:
    """Fleiss' kappa by statsmodels on the complete rows (every rater valid)."""
    sm = pytest.importorskip("statsmodels.stats.inter_rater")
    rows = codes[(codes >= 0).all(axis=1)]
    table, _ = sm.aggregate_raters(rows, n_cat=k)
    return float(sm.fleiss_kappa(table, method="fleiss")), len(rows)


def test_matches_statsmodels_with_holes(tmp_path: Path, rubric: Rubric) -> None:
    # 60 cases, four judges and a human on the binary-collapsible labels, with
    # invalid outputs and missing labels: incomplete cases are left out of both
    labels = [S, "partial", D]
    codes = random_codes(7, 60, 5, 3, missing=0.08)
    names = ["j1", "j2", "j3", "j4", "ann"]
    with validation_workspace(tmp_path / "w.sqlite", 60) as w:
        for col, name in enumerate(names):
            column = [labels[c] if c >= 0 else (None if c == -1 else "-") for c in codes[:, col]]
            add_labels(w, name, column, kind="human" if name == "ann" else "judge")
        table = labels_from_workspace(w, subset="validation")
    binary = np.where(codes >= 0, (codes == 2).astype(int), codes)  # relevant 0, not 1
    for gate_raters, cols in (("judges", 4), ("judges+reference", 5)):
        rep = compute_report(
            table,
            rubric,
            resamples=0,
            min_cases=1,
            gate_raters=gate_raters,  # type: ignore[arg-type]
        )
        expected, n = _statsmodels_fleiss(binary[:, :cols], 2)
        assert rep.gate.figures.fleiss_n == n
        assert rep.gate.figures.fleiss_kappa == pytest.approx(expected, abs=1e-12)
        on_labels, n_labels = _statsmodels_fleiss(codes[:, :cols], 3)
        key = "fleiss_judges" if cols == 4 else "fleiss_judges_and_reference"
        figure = getattr(rep.paper, key)["labels"]
        assert (figure.value, figure.n) == (pytest.approx(on_labels, abs=1e-12), n_labels)


def test_recorded_with_the_event_and_shown(ws: Workspace, rubric: Rubric, tmp_path: Path) -> None:
    rep = _report(ws, rubric, gate_raters="judges+reference")
    assert record_gate(ws, rep) is not None
    payload = ws.events("gate")[-1]
    assert payload["gate_raters"] == "judges+reference"
    check = check_scale_gate(ws, panel="panel-a", rubric_hash=rubric.content_hash)
    assert not check.passed
    assert "Fleiss' kappa over the judges and the human reference" in check.message
    # an event of an earlier tiap, without the field, reads as over the judges
    earlier = {k: v for k, v in payload.items() if k != "gate_raters"}
    assert GateEvent.model_validate(earlier).gate_raters == "judges"

    write_report(rep, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["gate"]["gate_raters"] == "judges+reference"
    assert data["gate"]["fleiss_raters"] == ["j1", "j2", "j3", "j4", "ann"]
    assert data["paper"]["fleiss_judges_and_reference"]["binary"]["value"] == pytest.approx(
        FIVE_RATERS
    )
    assert data["paper"]["fleiss_judges"]["binary"]["value"] == pytest.approx(JUDGES_ALONE)
    md = render_markdown(rep)
    assert (
        "Fleiss' kappa over the judges and the human reference (binary; j1, j2, j3, j4, ann; "
        "the paper's 5-rater validation figure; n=4): 0.394" in md
    )
    assert "Fleiss' kappa over the judges alone (binary; j1, j2, j3, j4; n=4): 0.407" in md
    assert "The gate's Fleiss' kappa is over the judges and the human reference" in md
    assert "Fleiss' kappa over the judges and the human reference (j1, j2, j3, j4, ann; " in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Fleiss&#x27; kappa over the judges alone" in html or (
        "Fleiss' kappa over the judges alone" in html
    )


def test_a_pass_over_five_raters_needs_a_reference(ws: Workspace, rubric: Rubric) -> None:
    rep = _report(ws, rubric, gate_raters="judges+reference")
    payload = rep.gate.model_dump()
    event = {
        "subset": "validation",
        "panel": "panel-a",
        "rubric_id": rubric.id,
        "rubric_hash": rubric.content_hash,
        "judges": [{"name": j} for j in JUDGES],
        "thresholds": {"min_fleiss": 0.3, "min_judge_kappa": -1.0},
        "figures": {**payload["figures"], "judge_kappa": {}, "judge_n": {}, "judge_ci": {}},
        "passed": True,
        "failures": [],
        "gate_raters": "judges+reference",
    }
    with pytest.raises(ValueError, match="no human reference"):
        GateEvent.model_validate(event)
    assert GateEvent.model_validate({**event, "gate_raters": "judges"}).passed


def test_without_a_human_reference_the_five_rater_gate_fails(
    tmp_path: Path, rubric: Rubric
) -> None:
    with validation_workspace(tmp_path / "w.sqlite", 4) as w:
        for rater, labels in JUDGES.items():
            add_labels(w, rater, labels, rubric=rubric)
        rep = _report(w, rubric, gate_raters="judges+reference")
    assert not rep.gate.passed
    assert rep.gate.figures.fleiss_kappa is None
    assert any("needs human labels as the reference" in f for f in rep.gate.failures)
    assert rep.paper is not None
    assert rep.paper.fleiss_judges is None
    assert "Fleiss' kappa over the judges alone" not in render_markdown(rep)


def test_bad_choices_are_refused(ws: Workspace, rubric: Rubric, tiap_cli, tmp_path) -> None:
    with pytest.raises(TiapError, match="--no-humans"):
        _report(ws, rubric, gate_raters="judges+reference", no_humans=True)
    with pytest.raises(TiapError, match="gate_raters must be one of judges, judges\\+reference"):
        _report(ws, rubric, gate_raters="humans")
    base = ["agreement", "report", "--db", ws.path, "--subset", "validation"]
    res = tiap_cli(*base, "--gate-raters", "all", "--out", tmp_path / "a")
    assert res.code == 2
    assert "--gate-raters must be one of judges, judges+reference" in res.err
    res = tiap_cli(
        *base, "--gate-raters", "judges+reference", "--no-humans", "--out", tmp_path / "b"
    )
    assert res.code == 2
    assert not (tmp_path / "b").exists()


def test_the_command_records_the_choice(ws: Workspace, rubric: Rubric, tiap_cli, tmp_path) -> None:
    ws.close()
    res = tiap_cli(
        "agreement", "report", "--db", ws.path, "--subset", "validation",
        "--min-cases", "4", "--min-judge-kappa", "-1", "--min-fleiss", "0.3",
        "--gate-raters", "judges+reference", "--out", tmp_path / "o", "--resamples", "0",
    )  # fmt: skip
    assert res.code == 0, res.err
    assert "--gate-raters judges+reference" in res.out
    with Workspace(ws.path, create=False) as w:
        assert w.events("gate")[-1]["gate_raters"] == "judges+reference"
        assert w.events("gate")[-1]["passed"] is True
