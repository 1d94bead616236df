"""Gate events are typed records: what the report records reads back the same,
events of the previous tiap stay readable (settings unknown), and a record that
does not validate is an error naming the workspace and the event, never a pass."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from agreement_support import SETTINGS, add_labels

from tiap.agreement import compute_report, labels_from_workspace, write_report_and_record_gate
from tiap.cases.events import GateEvent, GateForceEvent, read_events
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.judge import JudgeIdentity, check_scale_gate
from tiap.rubric import Rubric

S, P, D = "supports", "partial", "does_not_support"
TRUTH = [S, S, P, D, D, P, S, D, P, S, D, S]
JUDGES = [f"judge-{j}" for j in range(3)]
IDENTITY = {j: JudgeIdentity(f"provider/{j}", SETTINGS) for j in JUDGES}


def legacy_payload(rubric: Rubric, **changes: object) -> dict[str, object]:
    """A gate payload as the previous tiap's record_gate wrote it."""
    payload: dict[str, object] = {
        "subset": "validation",
        "panel": "panel-a",
        "judges": JUDGES,
        "judge_models": {j: [f"provider/{j}"] for j in JUDGES},
        "rubric_id": rubric.id,
        "rubric_hash": rubric.content_hash,
        "passed": True,
        "failures": [],
        "figures": {
            "scale": "binary",
            "fleiss_kappa": 0.91,
            "fleiss_n": 12,
            "judge_kappa": {},
            "judge_n": {},
        },
        "thresholds": {"min_fleiss": 0.8, "min_judge_kappa": 0.6},
    }
    payload.update(changes)
    return payload


#: the thresholds and figures of a pass as this tiap records it (40 cases, all complete)
NEW = {"min_fleiss": 0.8, "min_judge_kappa": 0.6, "min_cases": 30, "min_valid": 0.9}
VALID = dict.fromkeys(JUDGES, 40)
FIGURES = {
    "scale": "binary",
    "fleiss_kappa": 0.91,
    "fleiss_n": 40,
    "judge_kappa": {},
    "judge_n": {},
    "cases": 40,
    "judge_valid": VALID,
}


def check(ws: Workspace, rubric: Rubric, judges: dict[str, JudgeIdentity] | None = IDENTITY):
    return check_scale_gate(ws, panel="panel-a", rubric_hash=rubric.content_hash, judges=judges)


def test_a_recorded_verdict_reads_back_typed_with_its_report(
    workspace: Workspace, rubric: Rubric, tmp_path: Path
) -> None:
    for j in JUDGES:
        add_labels(workspace, j, TRUTH)
    # a twelve-case subset, deliberately: --min-cases 6
    report = compute_report(labels_from_workspace(workspace, subset="validation"), rubric,
                            min_cases=6)  # fmt: skip
    written = write_report_and_record_gate(report, tmp_path / "out", workspace)
    assert written.gate_event is not None
    (event,) = read_events(workspace, GateEvent)
    assert event.passed
    assert event.panel == "panel-a"
    assert event.subset == "validation"
    assert event.thresholds.min_fleiss == 0.8
    assert event.figures == report.gate.figures
    assert [(j.name, j.models, j.settings_hashes) for j in event.judges] == [
        (j, [f"provider/{j}"], [SETTINGS]) for j in JUDGES
    ]
    assert event.created_at is not None
    data = (tmp_path / "out" / "report.json").read_bytes()
    assert event.report is not None
    assert event.report.report_json_sha256 == hashlib.sha256(data).hexdigest()
    assert json.loads(data)["gate"]["judge_settings"] == {j: [SETTINGS] for j in JUDGES}
    assert check(workspace, rubric).passed


def test_an_event_of_the_previous_tiap_reads_with_settings_unknown(
    workspace: Workspace, rubric: Rubric
) -> None:
    workspace.record_event("gate", legacy_payload(rubric))
    workspace.record_event(
        "gate_force",
        {
            "panel": "panel-a",
            "rubric_id": rubric.id,
            "rubric_hash": rubric.content_hash,
            "subset": None,
            "message": "scale gate failed",
        },
    )
    (event,) = read_events(workspace, GateEvent)
    assert event.passed
    assert [j.models for j in event.judges] == [[f"provider/{j}"] for j in JUDGES]
    assert all(j.settings_hashes is None for j in event.judges)
    (forced,) = read_events(workspace, GateForceEvent)
    assert forced.judges is None
    # by name it is the gate of panel-a, but an earlier tiap's pass says neither how much
    # evidence it rested on nor the settings its labels came from: it does not hold
    by_name = check(workspace, rubric, judges=None)
    assert not by_name.passed
    assert "does not say how much evidence the verdict rested on" in by_name.message
    assert by_name.event is not None
    assert not by_name.event.evidence_recorded
    result = check(workspace, rubric)
    assert not result.passed
    assert "recorded by an earlier tiap" in result.message
    assert "tiap agreement report --db" in result.message
    # a failed verdict of the previous tiap still names its failing figures
    failed = legacy_payload(rubric, passed=False, failures=["binary Fleiss' kappa 0.41 < 0.80"])
    workspace.record_event("gate", failed)
    result = check(workspace, rubric)
    assert not result.passed
    assert "0.41 < 0.80" in result.message


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        # what a NaN threshold made the previous tiap record: "passed" with NaN
        ({"thresholds": {"min_fleiss": math.nan, "min_judge_kappa": 0.6}}, "finite"),
        ({"thresholds": {"min_fleiss": -1.0, "min_judge_kappa": -5.0}}, "between -1 and 1"),
        ({"passed": "yes"}, "passed"),
        ({"passed": True, "failures": ["kappa too low"]}, "passed is true with failures"),
        ({"passed": False, "failures": []}, "no failure is listed"),
        ({"figures": {}}, "missing field 'figures.scale'"),
        ({"thresholds": {"min_fleiss": 0.95, "min_judge_kappa": 0.6}}, "not at least 0.95"),
        ({"judges": []}, "no judge"),
        ({"panel": None}, "panel"),
        # a record of this tiap says what evidence its pass rested on, and it must hold
        ({"thresholds": {**NEW, "min_valid": None}}, "min_cases and min_valid are recorded"),
        ({"thresholds": {**NEW, "min_valid": float("nan")}}, "min_valid must be a finite"),
        ({"thresholds": {**NEW, "min_cases": 0}}, "min_cases"),
        ({"thresholds": NEW}, "the subset's cases or valid labels are missing"),
        (
            {"thresholds": NEW, "figures": {**FIGURES, "fleiss_n": 4}},
            "passed is true on 4 complete case(s) of 40, fewer than 30",
        ),
        (
            {"thresholds": NEW, "figures": {**FIGURES, "cases": 12, "fleiss_n": 12}},
            "passed is true on 12 complete case(s) of 12, fewer than 30",
        ),
        (
            {"thresholds": NEW, "figures": {**FIGURES, "judge_valid": {**VALID, "judge-2": 35}}},
            "judge judge-2 labelled 35 of 40 validly",
        ),
        (
            {
                "thresholds": NEW,
                "figures": {**FIGURES, "judge_kappa": {"judge-0": 0.9}, "judge_n": {"judge-0": 40}},
            },
            "the reference's rubric hash None is not the judges'",
        ),
        (
            {
                "thresholds": NEW,
                "figures": {**FIGURES, "judge_kappa": {"judge-0": 0.9}, "judge_n": {"judge-0": 9}},
                "reference_rubric_hash": "ab" * 32,
            },
            "judge judge-0's kappa rests on 9 case(s)",
        ),
    ],
)
def test_an_invalid_event_is_an_error_never_a_pass(
    workspace: Workspace, rubric: Rubric, changes: dict[str, object], problem: str
) -> None:
    workspace.record_event("gate", legacy_payload(rubric, **changes))
    with pytest.raises(TiapError) as err:
        check(workspace, rubric, judges=None)
    message = str(err.value)
    assert message.startswith(f"{workspace.path}: gate event 1, recorded ")
    assert problem in message
    assert "not taken as a verdict" in message
    assert "\n" not in message
    with pytest.raises(TiapError):
        read_events(workspace, GateEvent)


def test_a_pass_of_this_tiap_holds_its_evidence(workspace: Workspace, rubric: Rubric) -> None:
    payload = legacy_payload(rubric, thresholds=NEW, figures=FIGURES)
    payload["judges"] = [
        {"name": j, "models": [f"provider/{j}"], "settings_hashes": [SETTINGS]} for j in JUDGES
    ]
    del payload["judge_models"]
    workspace.record_event("gate", payload)
    (event,) = read_events(workspace, GateEvent)
    assert event.evidence_recorded
    assert (event.no_humans, event.reference_rubric_hash) == (False, None)
    assert check(workspace, rubric).passed


def test_a_newer_verdict_supersedes_an_invalid_one(
    workspace: Workspace, rubric: Rubric, tmp_path: Path
) -> None:
    bad = legacy_payload(rubric, thresholds={"min_fleiss": math.nan, "min_judge_kappa": 0.6})
    workspace.record_event("gate", bad)
    for j in JUDGES:
        add_labels(workspace, j, TRUTH)
    with pytest.raises(TiapError, match="gate event 1"):
        check(workspace, rubric)
    # the report run again (free) records a valid verdict, which is the one read
    report = compute_report(labels_from_workspace(workspace, subset="validation"), rubric,
                            min_cases=6)  # fmt: skip
    write_report_and_record_gate(report, tmp_path / "out", workspace)
    assert check(workspace, rubric).passed
