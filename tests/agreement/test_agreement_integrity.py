"""Every setting a user passes to the agreement report is checked where it enters
(the command line and the Python API alike), and a gate verdict is recorded only
once its report is written completely."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from agreement_support import add_labels

import tiap.agreement.write as write_module
from support.cli import CliResult, TiapCli
from tiap.agreement import compute_report, labels_from_workspace, write_report_and_record_gate
from tiap.agreement.gate import GateInputs
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import Rubric

S, P, D = "supports", "partial", "does_not_support"
TRUTH = [S, S, P, D, D, P, S, D, P, S, D, S]


def one_line_error(proc: CliResult) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tiap: error: ")
    assert "Traceback" not in proc.stderr
    return lines[0]


def gate_events(db: Path) -> int:
    with Workspace(db, create=False) as ws:
        return len(ws.events("gate"))


@pytest.fixture
def judged(workspace: Workspace) -> Workspace:
    for j in range(3):
        add_labels(workspace, f"judge-{j}", TRUTH)
    add_labels(workspace, "alice", TRUTH, kind="human")
    return workspace


BAD_SETTINGS = [
    ({"min_fleiss": math.nan}, "min_fleiss must be a finite number"),
    ({"min_fleiss": math.inf}, "min_fleiss must be a finite number"),
    ({"min_fleiss": -1.5}, "min_fleiss must lie between -1 and 1"),
    ({"min_judge_kappa": -5.0}, "min_judge_kappa must lie between -1 and 1"),
    ({"min_judge_kappa": 1.01}, "min_judge_kappa must lie between -1 and 1"),
    ({"min_judge_kappa": -math.inf}, "min_judge_kappa must be a finite number"),
    ({"quorum": 0}, "quorum must be at least 1"),
    ({"quorum": 4}, "quorum 4 exceeds the 3 voter(s)"),
    ({"resamples": -1}, "resamples must be between 0"),
    ({"resamples": 1_000_001}, "resamples must be between 0 (no intervals) and 1,000,000"),
    ({"seed": -1}, "seed must be a non-negative integer below 2**63"),
    ({"seed": 2**63}, "seed must be a non-negative integer below 2**63"),
]


@pytest.mark.parametrize(("settings", "message"), BAD_SETTINGS)
def test_python_api_checks_every_setting(
    judged: Workspace, rubric: Rubric, settings: dict[str, float], message: str
) -> None:
    table = labels_from_workspace(judged, subset="validation")
    with pytest.raises(TiapError) as err:
        compute_report(table, rubric, **settings)  # type: ignore[arg-type]
    assert message in str(err.value)
    assert judged.events("gate") == []


def test_the_limits_themselves_are_accepted(judged: Workspace, rubric: Rubric) -> None:
    table = labels_from_workspace(judged, subset="validation")
    rep = compute_report(
        table, rubric, min_fleiss=-1.0, min_judge_kappa=1.0, quorum=3, resamples=0, seed=2**63 - 1,
        min_cases=1, min_valid=1.0,
    )  # fmt: skip
    assert rep.gate.passed  # identical labels: every kappa is 1
    assert rep.majority.quorum == 3
    assert rep.gate.required_cases == 6  # --min-cases 1, but at least half of the 12 cases
    rep = compute_report(table, rubric, min_fleiss=1.0, resamples=1, seed=0, min_cases=6,
                         min_valid=0.0)  # fmt: skip
    assert rep.gate.passed


def test_gate_inputs_check_their_thresholds(judged: Workspace, rubric: Rubric) -> None:
    table = labels_from_workspace(judged, subset="validation")
    for bad in (math.nan, 2.0):
        with pytest.raises(TiapError, match="min_fleiss"):
            GateInputs(
                table=table,
                rubric=rubric,
                judges=[],
                scale="binary",
                fleiss=None,
                judge_kappa=None,
                min_fleiss=bad,
                min_judge_kappa=0.6,
            )


CLI_BAD = [
    (("--min-fleiss", "nan"), "--min-fleiss must be a finite number (got nan)"),
    (("--min-fleiss", "-1", "--min-judge-kappa", "-5"), "--min-judge-kappa must lie between"),
    (("--min-judge-kappa", "inf"), "--min-judge-kappa must be a finite number"),
    (("--quorum", "0"), "--quorum must be at least 1"),
    (("--quorum", "9"), "quorum 9 exceeds the 3 voter(s)"),
    (("--resamples", "-3"), "--resamples must be between 0"),
    (("--resamples", "2000000"), "--resamples must be between 0"),
    (("--seed", "-1"), "--seed must be a non-negative integer below 2**63"),
    (("--seed", str(2**63)), "--seed must be a non-negative integer below 2**63"),
]


def test_command_line_checks_every_setting(tiap_cli, judged: Workspace, tmp_path: Path) -> None:
    db = judged.path
    judged.close()
    for args, message in CLI_BAD:
        out = tmp_path / "out"
        proc = tiap_cli(
            "agreement", "report", "--db", db, "--subset", "validation", *args, "--out", out,
            cwd=tmp_path,
        )  # fmt: skip
        assert message in one_line_error(proc), args
        assert not out.exists()
        assert gate_events(db) == 0


def test_a_report_not_written_completely_records_no_verdict(
    judged: Workspace, rubric: Rubric, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = compute_report(labels_from_workspace(judged, subset="validation"), rubric)
    assert report.gate.applies
    # the HTML writer fails: nothing is written, nothing recorded
    out = tmp_path / "a"

    def broken(_: object) -> str:
        raise RuntimeError("html writer failed")

    with monkeypatch.context() as m:
        m.setattr(write_module, "render_html", broken)
        with pytest.raises(RuntimeError, match="html writer failed"):
            write_report_and_record_gate(report, out, judged)
    assert judged.events("gate") == []
    assert not (out / "report.json").exists()
    # report.html cannot be written (a directory is in the way): one-line error,
    # nothing recorded
    out = tmp_path / "b"
    (out / "report.html").mkdir(parents=True)
    with pytest.raises(TiapError, match=r"report\.html: cannot write the report"):
        write_report_and_record_gate(report, out, judged)
    assert judged.events("gate") == []
    # written completely: recorded
    written = write_report_and_record_gate(report, tmp_path / "c", judged)
    assert written.gate_event is not None
    assert len(judged.events("gate")) == 1


def test_command_line_records_no_verdict_when_the_report_fails(
    tiap_cli, judged: Workspace, tmp_path: Path
) -> None:
    db = judged.path
    judged.close()
    out = tmp_path / "out"
    (out / "report.html").mkdir(parents=True)
    proc = tiap_cli("agreement", "report", "--db", db, "--subset", "validation", "--out", out,
                    cwd=tmp_path)  # fmt: skip
    assert "report.html: cannot write the report" in one_line_error(proc)
    assert gate_events(db) == 0
    proc = tiap_cli("agreement", "report", "--db", db, "--subset", "validation", "--min-cases",
                    "6", "--out", tmp_path / "ok", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert gate_events(db) == 1


@pytest.fixture
def demo(demo_run) -> Path:
    """A demo workspace (the whole audit on the built-in sample, offline; once per
    session, restored for each test)."""
    return demo_run.root / "tiap-demo" / "workspace.sqlite"


@pytest.fixture(scope="module")
def tiap_cli(tiap_cli: TiapCli) -> TiapCli:
    """``tiap`` with wide tables (``COLUMNS=200``)."""
    return tiap_cli.with_env(COLUMNS="200")


def test_demo_nan_threshold_records_nothing_and_judging_stays_gated(
    tiap_cli, demo: Path, tmp_path: Path
) -> None:
    before = gate_events(demo)
    report = ("agreement", "report", "--db", demo, "--subset", "validation")
    proc = tiap_cli(*report, "--min-fleiss", "nan", "--out", tmp_path / "r", cwd=tmp_path)
    assert "--min-fleiss must be a finite number" in one_line_error(proc)
    assert gate_events(demo) == before
    proc = tiap_cli(*report, "--min-fleiss", "-1", "--min-judge-kappa", "-5", "--out",
                    tmp_path / "r2", cwd=tmp_path)  # fmt: skip
    assert "--min-judge-kappa must lie between -1 and 1" in one_line_error(proc)
    assert gate_events(demo) == before
    # the demo's gate failed: judging past the validation subset needs --force
    proc = tiap_cli("judge", "run", "--db", demo, "--panel", "offline", "--no-progress",
                    cwd=tmp_path)  # fmt: skip
    line = one_line_error(proc)
    assert "scale gate failed" in line
    assert "--force" in line
