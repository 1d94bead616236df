"""`tiap agreement report` end to end: real workspace and files, real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agreement_support import add_labels, make_case

from tiap.cases.workspace import Workspace

S, P, D = "supports", "partial", "does_not_support"
TRUTH = [S, S, P, D, D, P, S, D, P, S, D, S]


@pytest.fixture
def db(workspace: Workspace) -> Path:
    for j in range(5):
        add_labels(workspace, f"judge-{j}", TRUTH)
    add_labels(workspace, "alice", TRUTH, kind="human")
    workspace.add_cases([make_case(99)])  # a case nobody labelled
    workspace.save_subset("empty", ["case-0099"], params={"kind": "validation"})
    return workspace.path


def test_report_from_a_workspace_never_imports_litellm(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = (
        "import sys\n"
        "from tiap.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code)\n"
        "print('litellm imported:', 'litellm' in sys.modules)\n"
    )
    args = ["agreement", "report", "--db", str(db), "--subset", "validation", "--out", str(out)]
    args += ["--min-cases", "6"]  # a twelve-case subset, deliberately
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "litellm imported: False" in proc.stdout
    assert "exit 0" in proc.stdout
    assert "scale gate: PASS" in proc.stdout
    assert "gate recorded in" in proc.stdout
    for name in ("report.json", "report.md", "report.html"):
        assert (out / name).is_file()
    data = json.loads((out / "report.json").read_text())
    assert data["source"]["subset"] == "validation"
    assert data["gate"]["applies"] is True
    with Workspace(db) as ws:
        assert len(ws.events("gate")) == 1


def test_options_reach_the_report(tiap_cli, db: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "o"
    argv = [
        "agreement",
        "report",
        "--db",
        str(db),
        "--out",
        str(out),
        "--raters",
        "judge-0, judge-1,judge-2",
    ]
    argv += ["--reference", "alice", "--quorum", "2", "--resamples", "20", "--seed", "3"]
    argv += ["--min-fleiss", "0.99", "--min-judge-kappa", "0.5", "--rubric", "contested-credit"]
    assert tiap_cli(argv).code == 0
    data = json.loads((out / "report.json").read_text())
    assert data["included_raters"] == ["judge-0", "judge-1", "judge-2"]
    assert data["majority"]["quorum"] == 2
    assert data["bootstrap"]["resamples"] == 20
    assert data["bootstrap"]["seed"] == 3
    assert data["gate"]["min_fleiss"] == 0.99
    assert data["vs_reference"]["reference"]["policy"] == "rater alice"
    # a report on all cases shows the gate but does not record it
    assert data["gate"]["applies"] is False
    assert "not recorded" in capsys.readouterr().out
    with Workspace(db) as ws:
        assert ws.events("gate") == []


def test_labels_file(tiap_cli, tmp_path: Path, capsys) -> None:
    p = tmp_path / "l.csv"
    rows = [f"c{i},{r},{lab}" for i, lab in enumerate(TRUTH) for r in ("a", "b", "c")]
    p.write_text("case_id,rater,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert (
        tiap_cli("agreement", "report", "--labels", str(p), "--out", str(tmp_path / "o")).code == 0
    )
    data = json.loads((tmp_path / "o" / "report.json").read_text())
    assert data["rubric"] is None
    assert data["fleiss_kappa"]["labels"]["value"] == 1.0
    argv = ["agreement", "report", "--labels", str(p), "--rubric", "contested-credit"]
    assert tiap_cli(*argv, "--out", str(tmp_path / "o2")).code == 0
    data = json.loads((tmp_path / "o2" / "report.json").read_text())
    assert data["binary_labels"] == ["relevant", "not_relevant"]
    assert "Fleiss' kappa: labels 1.000" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "give exactly one of --db WORKSPACE or --labels FILE"),
        (["--db", "DB", "--labels", "LABELS"], "give exactly one of"),
        (["--labels", "LABELS", "--subset", "validation"], "--subset needs --db"),
        (["--db", "DB", "--subset", "nope"], "no subset named 'nope' (known: empty, validation)"),
        (
            ["--labels", "LABELS", "--rubric", "contested-credit"],
            "bad.csv:3: label 'maybe' is not in rubric",
        ),
        (["--db", "MISSING"], "workspace not found"),
        (["--db", "DB", "--raters", " , "], "--raters: give one or more rater names"),
        (["--db", "DB", "--reference", "zed"], "unknown rater 'zed'"),
        (
            ["--db", "DB", "--subset", "empty"],
            "no raters: no rater has labels on the cases in scope",
        ),
    ],
)
def test_errors_are_one_line(
    tiap_cli, db: Path, tmp_path: Path, capsys, extra: list[str], message: str
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("case_id,rater,label\nc1,a,supports\nc1,b,maybe\n", encoding="utf-8")
    subst = {"DB": str(db), "LABELS": str(bad), "MISSING": str(tmp_path / "none.sqlite")}
    argv = ["agreement", "report", "--out", str(tmp_path / "o"), *[subst.get(a, a) for a in extra]]
    assert tiap_cli(argv).code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tiap: error: ")
    assert "\n" not in err
    assert message in err
    assert not (tmp_path / "none.sqlite").exists()
