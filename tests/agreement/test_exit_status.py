"""Exit status of `agreement report` and `labels export|import`: 0 complete, 2 bad
input, 3 when the gate applies and failed (the report written), 130 interrupted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agreement_support import add_labels

from tiap.cases.workspace import Workspace

S, P, D = "supports", "partial", "does_not_support"
TRUTH = [S, S, P, D, D, P, S, D, P, S, D, S]
NOISY = [D, P, S, S, P, D, D, S, S, P, P, D]


@pytest.fixture
def failing(workspace: Workspace) -> Path:
    """Judges who disagree: the gate fails."""
    add_labels(workspace, "judge-a", TRUTH)
    add_labels(workspace, "judge-b", NOISY)
    return workspace.path


def _gate(out: Path) -> dict:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))["gate"]


def test_a_failed_gate_that_applies_exits_3_with_the_report_written(
    tiap_cli, failing: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "v"
    assert (
        tiap_cli(
            "agreement", "report", "--db", failing, "--subset", "validation", "--out", out
        ).code
        == 3
    )
    gate = _gate(out)
    assert (gate["applies"], gate["passed"]) == (True, False)
    assert "scale gate: FAIL" in capsys.readouterr().out
    with Workspace.open_readonly(failing) as ws:
        assert len(ws.events("gate")) == 1  # recorded all the same


def test_a_gate_shown_for_information_exits_0(tiap_cli, failing: Path, tmp_path: Path) -> None:
    out = tmp_path / "all"
    assert tiap_cli("agreement", "report", "--db", failing, "--out", out).code == 0
    assert (_gate(out)["applies"], _gate(out)["passed"]) == (False, False)
    path = tmp_path / "l.csv"
    assert tiap_cli("labels", "export", "--db", failing, "--out", path).code == 0
    assert tiap_cli("agreement", "report", "--labels", path, "--out", tmp_path / "f").code == 0
    assert _gate(tmp_path / "f")["passed"] is False


def test_bad_input_exits_2(tiap_cli, failing: Path, tmp_path: Path) -> None:
    assert (
        tiap_cli(
            "agreement", "report", "--db", failing, "--out", tmp_path / "o", "--seed", "-1"
        ).code
        == 2
    )
    assert (
        tiap_cli(
            "labels", "export", "--db", tmp_path / "none.sqlite", "--out", tmp_path / "x.csv"
        ).code
        == 2
    )
    assert (
        tiap_cli(
            "labels", "import", tmp_path / "none.csv", "--db", failing, "--rater-kind", "human"
        ).code
        == 2
    )


def test_ctrl_c_exits_130(
    tiap_cli, failing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import tiap.agreement.compute
    import tiap.agreement.label_export
    import tiap.agreement.label_import

    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tiap.agreement.compute, "compute_report", interrupt)
    monkeypatch.setattr(tiap.agreement.label_export, "export_labels", interrupt)
    monkeypatch.setattr(tiap.agreement.label_import, "import_labels", interrupt)
    path = tmp_path / "l.csv"
    path.write_text("case_id,rater,label\ncase-0000,ann,supports\n", encoding="utf-8")
    for argv in (
        ["agreement", "report", "--db", failing, "--out", tmp_path / "o"],
        ["labels", "export", "--db", failing, "--out", tmp_path / "x.csv"],
        ["labels", "import", path, "--db", failing, "--rater-kind", "human"],
    ):
        assert tiap_cli(argv).code == 130
        assert capsys.readouterr().err.strip().splitlines()[-1] == "tiap: interrupted"
