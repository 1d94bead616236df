"""`tiap labels export` and `tiap labels import` with a real workspace, in process:
the export gives the workspace's report figures, the import follows the rater
namespace and adds nothing twice."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from agreement_support import add_labels, make_case

from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.rubric import Rubric

S, P, D = "supports", "partial", "does_not_support"
TRUTH = [S, S, P, D, D, P, S, D, P, S, D, S]


def shifted(k: int) -> list[str | None]:
    """TRUTH with every k-th label moved on (judges that disagree a little)."""
    order = [S, P, D]
    return [order[(order.index(x) + 1) % 3] if i % k == 0 else x for i, x in enumerate(TRUTH)]


@pytest.fixture
def db(workspace: Workspace, rubric: Rubric) -> Path:
    """Twelve cases, every one labelled: four judges (one invalid output), two people
    (alice changed a label, and withdrew another one of bob's earlier labels)."""
    for j, k in enumerate((2, 3, 5, 7)):
        add_labels(workspace, f"judge-{j}", shifted(k))
    add_labels(workspace, "judge-4", [None, *TRUTH[1:]])  # one invalid output
    add_labels(workspace, "alice", TRUTH, kind="human")
    add_labels(workspace, "bob", shifted(4), kind="human")
    first = workspace.case_ids()[0]
    workspace.add_label(
        LabelRecord(
            case_id=first,
            rater="alice",
            rater_kind="human",
            label=D,
            note="on reflection",
            rubric_id=rubric.id,
            rubric_hash=rubric.content_hash,
        )
    )
    workspace.retract_label(workspace.case_ids()[1], "bob")
    return workspace.path


def _report(tiap_cli, tmp_path: Path, name: str, *source: str | Path) -> dict:
    out = tmp_path / name
    code = tiap_cli("agreement", "report", *source, "--out", out, "--resamples", "200").code
    assert code in (0, 3)
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_a_report_on_the_export_is_the_report_on_the_workspace(
    tiap_cli, db: Path, tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"labels{suffix}"
    assert tiap_cli("labels", "export", "--db", db, "--out", path).code == 0
    from_db = _report(tiap_cli, tmp_path, "db", "--db", db)
    from_file = _report(tiap_cli, tmp_path, "file", "--labels", path)
    assert from_db["source"]["kind"] == "workspace"
    assert from_file["source"]["kind"] == "file"
    # probe and drift results live in a workspace: a labels file has none
    assert from_db["diagnostics"]["available"] is True
    assert from_file["diagnostics"]["available"] is False
    del from_db["source"], from_file["source"], from_db["diagnostics"], from_file["diagnostics"]
    assert from_file == from_db
    # the figures are not trivial: humans, an invalid label, a rubric with its collapse
    assert from_db["rubric"]["id"] == "contested-credit"
    assert from_db["vs_reference"]["available"] is True
    assert {r["name"]: r["n_invalid"] for r in from_db["raters"]}["judge-4"] == 1
    assert from_db["gate"]["judge_models"]["judge-0"] == ["provider/judge-0"]


def test_on_a_validation_subset_only_the_gate_differs(tiap_cli, db: Path, tmp_path: Path) -> None:
    """The gate applies to a workspace's validation subset only (and exits 3 there when
    it fails); every figure is the same."""
    path = tmp_path / "v.csv"
    assert (
        tiap_cli("labels", "export", "--db", db, "--subset", "validation", "--out", path).code == 0
    )
    out = tmp_path / "db"
    argv = ["agreement", "report", "--db", db, "--subset", "validation", "--out", out]
    code = tiap_cli(*argv, "--resamples", "200").code
    from_db = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert from_db["gate"]["applies"] is True
    assert from_db["gate"]["passed"] is False  # the judges disagree too much
    assert code == 3
    from_file = _report(tiap_cli, tmp_path, "file", "--labels", path)
    assert from_file["gate"]["applies"] is False
    assert from_file["gate"]["passed"] is False
    for report in (from_db, from_file):
        del report["source"], report["diagnostics"]
        for key in ("applies", "note", "subset"):
            del report["gate"][key]
    assert from_file == from_db


def test_export_columns_rows_and_options(tiap_cli, db: Path, tmp_path: Path, capsys) -> None:
    path = tmp_path / "h.csv"
    assert (
        tiap_cli("labels", "export", "--db", db, "--out", path, "--rater-kind", "human").code == 0
    )
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert {r["rater"] for r in rows} == {"alice", "bob"}
    assert len(rows) == 12 + 11  # bob's withdrawn label is not a current label
    first = next(r for r in rows if r["rater"] == "alice")
    assert (first["label"], first["note"], first["rater_kind"]) == (D, "on reflection", "human")
    assert first["rubric_id"] == "contested-credit"
    assert len(first["rubric_hash"]) == 64
    assert first["created_at"]
    assert (first["dataset"], first["run"], first["category"]) == ("locomo", "run-0", "0")
    assert "wrote 23 current labels on 12 cases" in capsys.readouterr().out
    # every row ever stored: alice's change and bob's withdrawal too
    history = tmp_path / "all.jsonl"
    assert tiap_cli("labels", "export", "--db", db, "--out", history, "--all").code == 0
    lines = [json.loads(x) for x in history.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 7 * 12 + 2
    assert sum(1 for x in lines if x["reason"] == "retracted") == 1
    # the same workspace, the same bytes
    again = tmp_path / "again.jsonl"
    assert tiap_cli("labels", "export", "--db", db, "--out", again, "--all").code == 0
    assert again.read_bytes() == history.read_bytes()


def test_export_opens_the_workspace_read_only(tiap_cli, db: Path, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    before = sorted(p.name for p in db.parent.iterdir())
    data = db.read_bytes()
    db.chmod(0o444)
    try:
        assert (
            tiap_cli("labels", "export", "--db", db, "--out", tmp_path / "out" / "x.csv").code == 0
        )
    finally:
        db.chmod(0o644)
    assert sorted(p.name for p in db.parent.iterdir()) == before
    assert db.read_bytes() == data


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "{tmp}/x.txt"], "name the file .csv, .tsv or .jsonl"),
        (["--out", "{tmp}/x.csv", "--subset", "nope"], "no subset named 'nope'"),
        (["--out", "{tmp}/x.csv", "--rater-kind", "robot"], "--rater-kind: give one of judge"),
        (["--out", "{tmp}/no/such/dir/x.csv"], "does not exist"),
    ],
)
def test_export_errors_are_one_line(
    tiap_cli, db: Path, tmp_path: Path, capsys, args: list[str], message: str
) -> None:
    argv = ["labels", "export", "--db", db, *[a.format(tmp=tmp_path) for a in args]]
    assert tiap_cli(argv).code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tiap: error: ")
    assert "\n" not in err
    assert message in err


# --------------------------------------------------------------------- import


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """Another workspace with the same twelve cases and one judge."""
    path = tmp_path / "target.sqlite"
    with Workspace(path) as ws:
        ws.add_cases(
            make_case(
                i, dataset=("locomo", "longmemeval")[i % 2], run=f"run-{i % 3}", category=str(i % 4)
            )
            for i in range(12)
        )
        add_labels(ws, "gpt", TRUTH)
    return path


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _labels(db: Path, rater: str) -> list[LabelRecord]:
    with Workspace.open_readonly(db) as ws:
        return [r for c in ws.case_ids() for r in ws.label_history(c, rater)]


def _import(tiap_cli, path: Path, db: Path, kind: str = "human") -> int:
    return tiap_cli("labels", "import", path, "--db", db, "--rater-kind", kind).code


def test_import_adds_each_label_once_and_a_changed_label_anew(
    tiap_cli, target: Path, tmp_path: Path, capsys
) -> None:
    ids = [f"case-{i:04d}" for i in range(12)]
    rows = [
        {"case_id": c, "rater": "carol", "label": lab} for c, lab in zip(ids, TRUTH, strict=True)
    ]
    first = _write(tmp_path / "carol.csv", rows)
    assert _import(tiap_cli, first, target) == 0
    assert "imported 12 human labels" in capsys.readouterr().out
    stored = _labels(target, "carol")
    assert len(stored) == 12
    assert {(r.rater_kind, r.origin, r.rubric_id) for r in stored} == {
        ("human", "import", "contested-credit")
    }
    # the same file again: nothing
    assert _import(tiap_cli, first, target) == 0
    assert "imported 0 human labels" in capsys.readouterr().out
    assert len(_labels(target, "carol")) == 12
    # a changed label: one new row, the latest
    rows[0]["label"] = P
    assert _import(tiap_cli, _write(tmp_path / "carol2.csv", rows), target) == 0
    assert len(_labels(target, "carol")) == 13
    with Workspace.open_readonly(target) as ws:
        assert ws.latest_labels(case_ids=[ids[0]], raters=["carol"])[0].label == P
    # and back again (a third file): the first label is the latest once more
    rows[0]["label"] = TRUTH[0]
    assert _import(tiap_cli, _write(tmp_path / "carol3.csv", rows), target) == 0
    with Workspace.open_readonly(target) as ws:
        assert ws.latest_labels(case_ids=[ids[0]], raters=["carol"])[0].label == TRUTH[0]
    assert len(_labels(target, "carol")) == 14


def test_a_history_export_imports_once(tiap_cli, db: Path, target: Path, tmp_path: Path) -> None:
    history = tmp_path / "people.jsonl"
    args = ["labels", "export", "--db", db, "--out", history, "--all", "--rater-kind", "human"]
    assert tiap_cli(args).code == 0
    assert _import(tiap_cli, history, target) == 0
    imported = _labels(target, "alice") + _labels(target, "bob")
    assert len(imported) == 2 * 12 + 2
    assert _import(tiap_cli, history, target) == 0
    assert len(_labels(target, "alice") + _labels(target, "bob")) == 2 * 12 + 2
    # the people's current labels are those of the workspace they came from
    with Workspace.open_readonly(db) as a, Workspace.open_readonly(target) as b:
        mine = [(r.case_id, r.rater, r.label, r.note) for r in a.latest_labels(rater_kind="human")]
        theirs = [
            (r.case_id, r.rater, r.label, r.note) for r in b.latest_labels(rater_kind="human")
        ]
    assert theirs == mine
    # into the workspace it came from: nothing new either
    before = len(_labels(db, "alice"))
    assert _import(tiap_cli, history, db) == 0
    assert len(_labels(db, "alice")) == before


@pytest.mark.parametrize(
    ("row", "kind", "message"),
    [
        ({"case_id": "case-9999"}, "human", "people.csv:3: no case 'case-9999'"),
        ({"label": "maybe"}, "human", "people.csv:3: label 'maybe' is not in rubric"),
        ({"rater": "gpt"}, "human", "people.csv:3: "),
        ({"rater_kind": "judge"}, "human", "people.csv:3: rater 'dan' is a judge here"),
        ({}, "robot", "--rater-kind: give one of judge, human"),
        ({"created_at": "yesterday"}, "human", "people.csv:3: "),
        ({"rubric_id": "qrels-relevance"}, "human", "rows name several rubrics"),
    ],
)
def test_import_errors_name_the_line_and_write_nothing(
    tiap_cli, target: Path, tmp_path: Path, capsys, row: dict[str, str], kind: str, message: str
) -> None:
    good = {
        "case_id": "case-0000",
        "rater": "dan",
        "label": S,
        "rater_kind": "",
        "created_at": "",
        "rubric_id": "contested-credit",
    }
    path = _write(tmp_path / "people.csv", [good, {**good, "case_id": "case-0001", **row}])
    assert _import(tiap_cli, path, target, kind) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tiap: error: ")
    assert "\n" not in err
    assert message in err
    assert _labels(target, "dan") == []
    if row.get("rater") == "gpt":
        assert "'gpt' is the name of a judge" in err
    if "created_at" in row:
        assert "'yesterday' is not an ISO 8601 time" in err


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_import_refuses_conflicting_rows_as_the_report_does(
    tiap_cli, target: Path, tmp_path: Path, capsys, suffix: str
) -> None:
    """Two labels by one rater for one case in one file: which is meant? Both readers
    refuse the file, naming both lines (the import used to keep the last one)."""
    rows = [
        {"case_id": "case-0000", "rater": "dan", "label": S},
        {"case_id": "case-0001", "rater": "dan", "label": P},
        {"case_id": "case-0000", "rater": "dan", "label": D},
    ]
    path = tmp_path / f"people{suffix}"
    if suffix == ".csv":
        _write(path, rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    problem = (
        f"{path}:4: second label for case 'case-0000' by rater 'dan' (first at line 2); "
        "keep one row per case and rater"
    )
    if suffix == ".jsonl":  # no header line
        problem = problem.replace(":4:", ":3:").replace("at line 2", "at line 1")
    before = target.read_bytes()
    assert _import(tiap_cli, path, target) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tiap: error: {problem} (or give every row of the pair its created_at")
    assert err.count("\n") == 1
    assert _labels(target, "dan") == []
    assert target.read_bytes() == before
    assert tiap_cli("agreement", "report", "--labels", path, "--out", tmp_path / "r").code == 2
    assert capsys.readouterr().err == f"tiap: error: {problem}\n"


def test_import_takes_a_history_only_when_every_row_gives_its_time(
    tiap_cli, target: Path, tmp_path: Path, capsys
) -> None:
    t1, t2 = "2025-01-01T10:00:00+00:00", "2025-01-02T10:00:00+00:00"
    rows = [
        {"case_id": "case-0000", "rater": "dan", "label": S, "created_at": t1},
        {"case_id": "case-0000", "rater": "dan", "label": D, "created_at": t2},
    ]
    assert _import(tiap_cli, _write(tmp_path / "history.csv", rows), target) == 0
    assert [(r.label, r.created_at) for r in _labels(target, "dan")] == [(S, t1), (D, t2)]
    # a row without its time among them: the current label, or a step of the history?
    rows.append({"case_id": "case-0000", "rater": "dan", "label": P, "created_at": ""})
    path = _write(tmp_path / "mixed.csv", rows)
    assert _import(tiap_cli, path, target) == 2
    err = capsys.readouterr().err
    assert f"{path}:4: second label for case 'case-0000' by rater 'dan' (first at line 2)" in err
    assert len(_labels(target, "dan")) == 2
    # a history is not a table of current labels: the report refuses it
    assert tiap_cli("agreement", "report", "--labels", tmp_path / "history.csv", "--out",
                    tmp_path / "r").code == 2  # fmt: skip
    assert "history.csv:3: second label for case 'case-0000'" in capsys.readouterr().err


def test_a_history_goes_forward_in_time(tiap_cli, target: Path, tmp_path: Path, capsys) -> None:
    """Two labels at one time, or a later line with an earlier time, would leave the
    current label to the order of the file's lines: both are errors naming both lines,
    and nothing is imported."""
    t1, t2 = "2025-01-01T10:00:00+00:00", "2025-01-02T10:00:00+00:00"
    same = [
        {"case_id": "case-0000", "rater": "dan", "label": S, "created_at": t1},
        {"case_id": "case-0000", "rater": "dan", "label": D, "created_at": t1},
    ]
    path = _write(tmp_path / "same.csv", same)
    assert _import(tiap_cli, path, target) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: label for case 'case-0000' by rater 'dan' is at the same time as" in err
    assert "line 2" in err
    backwards = [
        {"case_id": "case-0000", "rater": "dan", "label": S, "created_at": t2},
        # the same moment as t1 written in another zone: still earlier than t2
        {
            "case_id": "case-0000",
            "rater": "dan",
            "label": D,
            "created_at": "2025-01-01T12:00:00+02:00",
        },
    ]
    path = _write(tmp_path / "backwards.csv", backwards)
    assert _import(tiap_cli, path, target) == 2
    assert f"{path}:3: label for case 'case-0000' by rater 'dan' is earlier than" in (
        capsys.readouterr().err
    )
    assert _labels(target, "dan") == []


def test_import_needs_an_existing_workspace(tiap_cli, tmp_path: Path, capsys) -> None:
    path = _write(tmp_path / "l.csv", [{"case_id": "c", "rater": "a", "label": S}])
    assert _import(tiap_cli, path, tmp_path / "none.sqlite") == 2
    assert "workspace not found" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()
