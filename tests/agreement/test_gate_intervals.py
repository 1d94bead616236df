"""The gate knows its uncertainty: every gate figure carries its interval in the verdict,
the verdict says whether it is conclusive, and ``--gate-on lower`` asks each interval's
lower bound to clear its threshold (recorded with the verdict)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agreement_support import add_labels, validation_workspace

from tiap.agreement import compute_report, labels_from_workspace, record_gate
from tiap.agreement.figure_model import Figure
from tiap.agreement.gate import gate_event
from tiap.agreement.gate_intervals import conclusive, lower_failure, side
from tiap.cases.events import GateEvent, read_events
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import Rubric

S, P, D = "supports", "partial", "does_not_support"


def _figure(value: float, ci: list[float] | None) -> Figure:
    return Figure(value=value, ci=ci, n=40)


def test_side_and_conclusive() -> None:
    assert side(_figure(0.9, [0.82, 0.95]), 0.8) is True
    assert side(_figure(0.9, [0.80, 0.95]), 0.8) is True  # at the threshold clears it
    assert side(_figure(0.7, [0.6, 0.79]), 0.8) is False
    assert side(_figure(0.85, [0.7, 0.95]), 0.8) is None
    assert side(_figure(0.85, None), 0.8) is None
    assert side(Figure(value=None, n=0, reason="x"), 0.8) is None
    sure = _figure(0.9, [0.85, 0.95])
    assert conclusive(sure, {"a": _figure(0.7, [0.65, 0.75])}, 0.8, 0.6) is True
    assert conclusive(sure, {"a": _figure(0.7, [0.55, 0.75])}, 0.8, 0.6) is False
    assert conclusive(None, {}, 0.8, 0.6) is False


def test_lower_failure() -> None:
    f = _figure(0.85, [0.7, 0.95])
    assert lower_failure("Fleiss' kappa", f, 0.8, "point") is None
    assert lower_failure("Fleiss' kappa", f, 0.8, "lower") == (
        "Fleiss' kappa 0.850 [0.700, 0.950]: lower bound 0.700 < 0.80 (n=40, --gate-on lower)"
    )
    assert lower_failure("Fleiss' kappa", _figure(0.85, [0.81, 0.9]), 0.8, "lower") is None
    missing = lower_failure("Fleiss' kappa", _figure(0.85, None), 0.8, "lower")
    assert missing is not None
    assert "has no interval" in missing


def _workspace(path: Path) -> Path:
    """Forty validation cases; three judges who mostly agree (judge-c differs on 3)."""
    ws = validation_workspace(path, 40)
    ids = ws.case_ids(subset="validation")
    labels = [(S, D, P, D)[i % 4] for i in range(40)]
    odd = [(D if lab != D else S) if i in (1, 6, 11) else lab for i, lab in enumerate(labels)]
    add_labels(ws, "judge-a", labels, case_ids=ids)
    add_labels(ws, "judge-b", labels, case_ids=ids)
    add_labels(ws, "judge-c", odd, case_ids=ids)
    ws.close()
    return path


def test_point_passes_lower_fails_between_the_bound_and_the_estimate(
    tmp_path: Path, rubric: Rubric
) -> None:
    db = _workspace(tmp_path / "ws.sqlite")
    with Workspace.open_readonly(db) as ws:
        table = labels_from_workspace(ws, subset="validation")
    first = compute_report(table, rubric, min_fleiss=0.0)
    f = first.gate.figures
    assert f.fleiss_kappa is not None
    assert f.fleiss_ci is not None
    low, high = f.fleiss_ci
    assert low < f.fleiss_kappa <= high
    assert first.gate.conclusive is True  # [low, high] wholly above 0
    threshold = round((low + f.fleiss_kappa) / 2, 4)
    point = compute_report(table, rubric, min_fleiss=threshold)
    assert point.gate.passed
    assert point.gate.gate_on == "point"
    assert point.gate.conclusive is False  # the interval straddles the threshold
    lower = compute_report(table, rubric, min_fleiss=threshold, gate_on="lower")
    assert not lower.gate.passed
    assert lower.gate.gate_on == "lower"
    assert lower.gate.failures == [
        f"binary Fleiss' kappa over the judges {f.fleiss_kappa:.3f} [{low:.3f}, {high:.3f}]: "
        f"lower bound {low:.3f} < {threshold:.2f} (n=40, --gate-on lower)"
    ]
    # the verdict is recorded with its rule, its intervals and whether it is conclusive
    with Workspace(db, create=False) as ws:
        record_gate(ws, lower)
        record_gate(ws, point)
        events = read_events(ws, GateEvent)
    assert [(e.gate_on, e.passed, e.conclusive) for e in events] == [
        ("lower", False, False),
        ("point", True, False),
    ]
    assert events[1].figures.fleiss_ci == [low, high]
    below = compute_report(table, rubric, min_fleiss=round(low / 2, 4), gate_on="lower")
    assert below.gate.passed
    assert below.gate.conclusive is True


def test_a_recorded_lower_pass_must_have_its_bound_above_the_threshold(
    tmp_path: Path, rubric: Rubric
) -> None:
    db = _workspace(tmp_path / "ws.sqlite")
    with Workspace.open_readonly(db) as ws:
        report = compute_report(
            labels_from_workspace(ws, subset="validation"), rubric, min_fleiss=0.0
        )
    event = gate_event(report)
    assert event is not None
    data = event.payload()
    assert GateEvent.model_validate(data).gate_on == "point"
    low = report.gate.figures.fleiss_ci
    assert low is not None
    data["gate_on"] = "lower"
    data["thresholds"]["min_fleiss"] = round((low[0] + report.gate.figures.fleiss_kappa) / 2, 4)  # type: ignore[operator]
    with pytest.raises(ValueError, match=r"Fleiss' kappa .* \(lower\) is not at least"):
        GateEvent.model_validate(data)
    # an earlier tiap's record (no gate_on, no intervals) reads as the point rule
    del data["gate_on"]
    del data["conclusive"]
    data["figures"].pop("fleiss_ci")
    data["thresholds"]["min_fleiss"] = 0.0
    old = GateEvent.model_validate(data)
    assert (old.gate_on, old.conclusive, old.figures.fleiss_ci) == ("point", None, None)


def test_no_interval_fails_the_lower_rule(tmp_path: Path, rubric: Rubric) -> None:
    db = _workspace(tmp_path / "ws.sqlite")
    with Workspace.open_readonly(db) as ws:
        table = labels_from_workspace(ws, subset="validation")
    report = compute_report(table, rubric, min_fleiss=0.0, resamples=0, gate_on="lower")
    assert not report.gate.passed
    assert report.gate.conclusive is False
    assert "has no interval" in report.gate.failures[0]


def test_gate_on_is_checked(rubric: Rubric, tmp_path: Path) -> None:
    db = _workspace(tmp_path / "ws.sqlite")
    with Workspace.open_readonly(db) as ws:
        table = labels_from_workspace(ws, subset="validation")
    with pytest.raises(TiapError, match=r"^gate_on must be one of point, lower \(got 'upper'\)$"):
        compute_report(table, rubric, gate_on="upper")  # type: ignore[arg-type]


def test_the_command_line_gates_on_the_lower_bound(tiap_cli, tmp_path: Path, capsys) -> None:
    db = _workspace(tmp_path / "ws.sqlite")
    out = tmp_path / "r"
    args = ["agreement", "report", "--db", db, "--subset", "validation", "--out", out]
    bad = tiap_cli(*args, "--gate-on", "upper")
    assert bad.code == 2
    assert "--gate-on must be one of point, lower (got 'upper')" in capsys.readouterr().err
    code = tiap_cli(*args, "--gate-on", "lower", "--min-fleiss", "0.0").code
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "scale gate: PASS (recorded for panel panel-a" in printed
    assert (
        "thresholds on the 95% interval lower bounds (--gate-on lower); conclusive: yes" in printed
    )
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "Rule: thresholds on the 95% interval lower bounds (--gate-on lower)" in md
    with Workspace.open_readonly(db) as ws:
        (event,) = read_events(ws, GateEvent)
    assert event.gate_on == "lower"
    assert event.conclusive is True
