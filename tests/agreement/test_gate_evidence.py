"""The gate rests on enough evidence: a minimum of complete cases (at least half of
the subset), a minimum valid share per judge, and intervals that do not claim
certainty a few cases cannot give (Wilson for shares; percentile intervals on fewer
than 30 cases marked unreliable)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from agreement_support import add_labels, validation_workspace

from tiap.agreement import compute_report, labels_from_workspace, record_gate
from tiap.cases.events import GateEvent, read_events
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import Rubric
from tiap.stats import wilson_interval

S, P, D = "supports", "partial", "does_not_support"


def truth(n: int) -> list[str]:
    """Labels every judge agrees on: both binary labels occur."""
    return [(S, D, P, D)[i % 4] for i in range(n)]


def four_complete(path: Path) -> Path:
    """Twenty validation cases; three judges agree on every one, but judge-c's
    output was invalid (bad_request) on 16 of them: four complete cases."""
    ws = validation_workspace(path, 20, beyond=10)
    ids = ws.case_ids(subset="validation")
    labels = truth(20)
    add_labels(ws, "judge-a", labels, case_ids=ids)
    add_labels(ws, "judge-b", labels, case_ids=ids)
    add_labels(ws, "judge-c", labels[:4] + [None] * 16, case_ids=ids)
    ws.close()
    return path


def test_four_complete_cases_do_not_pass_the_gate(tiap_cli, tmp_path: Path, capsys) -> None:
    db = four_complete(tmp_path / "ws.sqlite")
    out = tmp_path / "r"
    code = tiap_cli("agreement", "report", "--db", db, "--subset", "validation", "--out", out).code
    printed = capsys.readouterr().out
    assert code == 3, printed
    assert "scale gate: FAIL" in printed
    assert (
        "failed: the subset has 20 case(s), fewer than the 30 complete cases the gate needs "
        "(--min-cases 30)" in printed
    )
    assert (
        "failed: judge judge-c labelled 4 of 20 case(s) validly (0.200; 16 invalid, 0 missing): "
        "the gate needs a valid share of at least 0.90 (--min-valid)" in printed
    )
    # the kappa over four identical cases is 1, its bootstrap interval [1, 1]: shown
    # marked unreliable, never as a plain interval
    assert "Fleiss' kappa: labels 1.000 [1.000, 1.000] (n=4, interval unreliable" in printed
    data = json.loads((out / "report.json").read_text())
    fleiss = data["fleiss_kappa"]["binary"]
    assert (fleiss["value"], fleiss["n"], fleiss["ci"]) == (1.0, 4, [1.0, 1.0])
    assert (fleiss["ci_method"], fleiss["ci_unreliable"]) == ("percentile", True)
    gate = data["gate"]
    assert (gate["passed"], gate["min_cases"], gate["min_valid"]) == (False, 30, 0.9)
    assert gate["figures"]["cases"] == 20
    assert gate["figures"]["judge_valid"] == {"judge-a": 20, "judge-b": 20, "judge-c": 4}
    md = (out / "report.md").read_text()
    assert "interval unreliable" in md
    assert "Complete cases: 4 of 20" in md
    html = (out / "report.html").read_text()
    assert "interval unreliable" in html
    with Workspace(db, create=False) as ws:
        (event,) = read_events(ws, GateEvent)
    assert not event.passed
    assert (event.thresholds.min_cases, event.thresholds.min_valid) == (30, 0.9)
    assert any("judge-c labelled 4 of 20" in f for f in event.failures)


def test_min_cases_is_at_least_half_of_the_subset(tmp_path: Path, rubric: Rubric) -> None:
    ws = validation_workspace(tmp_path / "w.sqlite", 40)
    ids = ws.case_ids(subset="validation")
    labels = truth(40)
    # judge-c labelled 19 of 40 validly: 19 complete cases
    add_labels(ws, "judge-a", labels, case_ids=ids)
    add_labels(ws, "judge-b", labels, case_ids=ids)
    add_labels(ws, "judge-c", labels[:19] + ["-"] * 21, case_ids=ids)
    table = labels_from_workspace(ws, subset="validation")
    # --min-cases 10, but half of the subset is 20: 19 complete cases fail ...
    rep = compute_report(table, rubric, resamples=0, min_cases=10, min_valid=0.0)
    assert not rep.gate.passed
    assert rep.gate.required_cases == 20
    assert rep.gate.failures == [
        "only 19 complete case(s) (every judge labelled validly) of the 40 in the subset: "
        "the gate needs at least 20 (--min-cases 10, and at least half of the subset)"
    ]
    # ... and 20 pass
    add_labels(ws, "judge-c", [labels[19]], case_ids=[ids[19]])
    rep = compute_report(
        labels_from_workspace(ws, subset="validation"), rubric, resamples=0, min_cases=10,
        min_valid=0.0,
    )  # fmt: skip
    assert rep.gate.passed, rep.gate.failures
    assert record_gate(ws, rep) is not None
    (event,) = read_events(ws, GateEvent)
    assert event.passed
    assert (event.figures.fleiss_n, event.figures.cases) == (20, 40)
    ws.close()


def test_valid_share_per_judge(tmp_path: Path, rubric: Rubric) -> None:
    ws = validation_workspace(tmp_path / "w.sqlite", 30)
    ids = ws.case_ids(subset="validation")
    labels = truth(30)
    add_labels(ws, "judge-a", labels, case_ids=ids)
    add_labels(ws, "judge-b", labels, case_ids=ids)
    # judge-c: 26 valid, 2 invalid, 2 missing: 26/30 = 0.867 < 0.9
    add_labels(ws, "judge-c", [*labels[:26], None, None, "-", "-"], case_ids=ids)
    table = labels_from_workspace(ws, subset="validation")
    rep = compute_report(table, rubric, resamples=0, min_cases=20)
    assert rep.gate.failures == [
        "judge judge-c labelled 26 of 30 case(s) validly (0.867; 2 invalid, 2 missing): the "
        "gate needs a valid share of at least 0.90 (--min-valid)"
    ]
    assert compute_report(table, rubric, resamples=0, min_cases=20, min_valid=0.85).gate.passed
    ws.close()


def test_enough_evidence_passes_with_the_defaults(tmp_path: Path, rubric: Rubric) -> None:
    ws = validation_workspace(tmp_path / "w.sqlite", 30)
    labels = truth(30)
    for j in ("judge-a", "judge-b", "judge-c"):
        add_labels(ws, j, labels, case_ids=ws.case_ids(subset="validation"))
    rep = compute_report(labels_from_workspace(ws, subset="validation"), rubric)
    assert rep.gate.passed, rep.gate.failures
    fleiss = rep.fleiss_kappa["binary"]
    assert (fleiss.n, fleiss.ci_method, fleiss.ci_unreliable) == (30, "percentile", False)
    ws.close()


def test_shares_carry_wilson_intervals(tmp_path: Path, rubric: Rubric) -> None:
    ws = validation_workspace(tmp_path / "w.sqlite", 12)
    ids = ws.case_ids(subset="validation")
    labels = truth(12)
    add_labels(ws, "judge-a", labels, case_ids=ids)
    # alice agrees with judge-a on 10 of 12 cases: she swapped supports and partial on
    # cases 0 and 2, which the binary collapse does not tell apart
    alice = [{S: P, P: S}[lab] if i in (0, 2) else lab for i, lab in enumerate(labels)]
    add_labels(ws, "alice", alice, kind="human", case_ids=ids)
    table = labels_from_workspace(ws, subset="validation")
    for resamples in (0, 200):
        rep = compute_report(table, rubric, resamples=resamples, min_cases=6)
        (judge,) = rep.vs_reference.raters
        acc = judge.labels.accuracy
        assert (acc.value, acc.n) == (pytest.approx(10 / 12), 12)
        assert acc.ci == pytest.approx(list(wilson_interval(10, 12)))
        assert (acc.ci_method, acc.ci_unreliable) == ("wilson", False)
        # the binary collapse: S and P are both relevant, so they agree on all 12
        bacc = judge.binary.accuracy  # type: ignore[union-attr]
        assert bacc.ci == pytest.approx(list(wilson_interval(12, 12)))
        assert bacc.ci[0] < 0.8  # 12 of 12 is not certainty
        kappa = judge.labels.kappa
        if resamples:
            assert (kappa.ci_method, kappa.ci_unreliable) == ("percentile", True)
        else:
            assert (kappa.ci, kappa.ci_method, kappa.ci_unreliable) == (None, None, False)
    ws.close()


def test_a_subset_smaller_than_min_cases_says_what_to_do(tmp_path: Path, rubric: Rubric) -> None:
    ws = validation_workspace(tmp_path / "w.sqlite", 12)
    for j in ("judge-a", "judge-b"):
        add_labels(ws, j, truth(12), case_ids=ws.case_ids(subset="validation"))
    rep = compute_report(labels_from_workspace(ws, subset="validation"), rubric, resamples=0)
    assert rep.gate.failures == [
        "the subset has 12 case(s), fewer than the 30 complete cases the gate needs "
        "(--min-cases 30): draw a validation subset of at least 30 cases (--n 30 or more with "
        "tiap cases sample or tiap audit), or lower --min-cases deliberately"
    ]
    ws.close()


BAD = [
    ({"min_cases": 0}, "min_cases must be at least 1"),
    ({"min_cases": 1.5}, "min_cases must be an integer"),
    ({"min_cases": 10**7}, "min_cases must be at most 1,000,000"),
    ({"min_valid": math.nan}, "min_valid must be a finite number in [0, 1]"),
    ({"min_valid": 1.2}, "min_valid must be a finite number in [0, 1]"),
    ({"min_decided": -0.1}, "min_decided must be a finite number in [0, 1]"),
]


@pytest.mark.parametrize(("settings", "message"), BAD)
def test_python_api_checks_the_new_settings(
    tmp_path: Path, rubric: Rubric, settings: dict, message: str
) -> None:
    ws = validation_workspace(tmp_path / "w.sqlite", 4)
    add_labels(ws, "judge-a", truth(4))
    with pytest.raises(TiapError) as err:
        compute_report(labels_from_workspace(ws, subset="validation"), rubric, **settings)
    assert message in str(err.value)
    ws.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--min-cases", "0"), "--min-cases must be at least 1"),
        (("--min-cases", "2000000"), "--min-cases must be at most 1,000,000"),
        (("--min-valid", "nan"), "--min-valid must be a finite number in [0, 1] (got nan)"),
        (("--min-valid", "1.5"), "--min-valid must be a finite number in [0, 1]"),
        (("--min-decided", "inf"), "--min-decided must be a finite number in [0, 1]"),
    ],
)
def test_command_line_checks_the_new_settings(
    tiap_cli, tmp_path: Path, capsys, args: tuple[str, ...], message: str
) -> None:
    db = four_complete(tmp_path / "ws.sqlite")
    out = tmp_path / "r"
    assert tiap_cli("agreement", "report", "--db", db, "--subset", "validation", *args,
                    "--out", out).code == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert err.startswith("tiap: error: ")
    assert "\n" not in err
    assert message in err
    assert not out.exists()
    with Workspace(db, create=False) as ws:
        assert ws.events("gate") == []
