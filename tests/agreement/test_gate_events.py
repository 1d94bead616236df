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


def check(ws: Workspace, rubric: Rubric, judges: dict[str, JudgeIdentity] | None = IDENTITY):
    return check_scale_gate(ws, panel="panel-a", rubric_hash=rubric.content_hash, judges=judges)


def test_a_recorded_verdict_reads_back_typed_with_its_report(
    workspace: Workspace, rubric: Rubric, tmp_path: Path
) -> None:
    for j in JUDGES:
        add_labels(workspace, j, TRUTH)
    report = compute_report(labels_from_workspace(workspace, subset="validation"), rubric)
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
    # by name it is the gate of panel-a; for the panel as it is now it does not hold:
    # the settings its labels came from are unknown
    assert check(workspace, rubric, judges=None).passed
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
    report = compute_report(labels_from_workspace(workspace, subset="validation"), rubric)
    write_report_and_record_gate(report, tmp_path / "out", workspace)
    assert check(workspace, rubric).passed
