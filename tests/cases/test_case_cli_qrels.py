"""`tiap cases from-qrels` and the case kind in `cases list/show/sample`, in process."""

from __future__ import annotations

import json
from pathlib import Path

from test_case_from_qrels import graded_task

from support.lmeb import RUN_FILE
from tiap.cases.workspace import Workspace


def test_from_qrels_list_show_and_sample(tiap_cli, tmp_path: Path, sample_bundle_dir: Path) -> None:
    task, db = graded_task(tmp_path), str(tmp_path / "w.sqlite")
    code, out, err = tiap_cli(
        "cases", "from-qrels", str(task), "--db", db, "--per-dataset", "10",
        "--negatives", "3", "--run", RUN_FILE,
    )  # fmt: skip
    assert code == 0, err
    assert "graded" in out
    assert "grade 2: 3/6, grade 1: 5/12, grade 0: 2/6" in out
    assert "subset 'qrels' (created): 13 pairs; 13 new cases" in out
    code, again, _ = tiap_cli(
        "cases", "from-qrels", str(task), "--db", db, "--per-dataset", "10",
        "--negatives", "3", "--run", RUN_FILE, "--json",
    )  # fmt: skip
    report = json.loads(again)
    assert (report["subset_status"], report["added"], report["cases"]) == ("unchanged", 0, 13)
    assert report["datasets"]["graded"]["negatives"] == 3

    # contested credits beside them, and the kind in every listing
    assert tiap_cli("cases", "extract", str(sample_bundle_dir), "--db", db)[0] == 0
    code, listed, _ = tiap_cli("cases", "list", "--db", db, "--kind", "qrels")
    lines = listed.strip().splitlines()
    header = ["case_id", "kind", "dataset", "run", "query_id", "rank", "bucket"]
    assert lines[0].split()[:7] == header
    assert lines[-1] == "13 cases (13 qrels)"
    negative = next(line.split() for line in lines[1:-1] if " negative " in line)
    assert negative[1:4] == ["qrels", "graded", "run"]
    code, everything, _ = tiap_cli("cases", "list", "--db", db)
    assert everything.splitlines()[-1].endswith("contested, 13 qrels)")
    code, contested, _ = tiap_cli("cases", "list", "--db", db, "--kind", "contested")
    assert contested.splitlines()[0].split()[:2] == ["case_id", "run"]  # the table as before
    code, shown, _ = tiap_cli("cases", "show", negative[0], "--db", db)
    assert "kind qrels  dataset graded" in shown
    assert "qrels: no qrels line; a top-ranked document of run run (rank 1)" in shown
    code, as_json, _ = tiap_cli("cases", "show", negative[0], "--db", db, "--json")
    case = json.loads(as_json)["case"]
    assert (case["kind"], case["pair"], case["grade"]) == ("qrels", "negative", None)
    assert case["rank"] == 1

    code, _, err = tiap_cli("cases", "sample", "--db", db, "--n", "6")
    assert code == 2
    assert "choose it with --kind" in err
    code, out, _ = tiap_cli("cases", "sample", "--db", db, "--n", "6", "--kind", "qrels")
    assert code == 0
    assert "graded · grade 2: 1" in out
    assert "graded · negative: 1" in out
    with Workspace.open_readonly(db) as ws:
        assert ws.case_kinds(subset="validation") == {"qrels": 6}
    code, _, err = tiap_cli("cases", "list", "--db", db, "--kind", "pairs")
    assert code == 2
    assert "--kind: give one of contested, qrels, answer (not 'pairs')" in err


def test_from_qrels_bad_input_is_one_line_and_exit_2(tiap_cli, tmp_path: Path) -> None:
    task = graded_task(tmp_path)
    (task / "qrels.tsv").write_text("s_0_q\td0\tmaybe\n", encoding="utf-8")
    code, _, err = tiap_cli("cases", "from-qrels", str(task), "--db", str(tmp_path / "w"))
    assert code == 2
    assert not (tmp_path / "w").exists()  # bad input creates no workspace
    assert err.strip().count("\n") == 0
    assert "qrels.tsv:1: score 'maybe' is not an integer" in err
    assert "Traceback" not in err
    code, _, err = tiap_cli(
        "cases", "from-qrels", str(task), "--db", str(tmp_path / "w"), "--negatives", "2"
    )
    assert code == 2
    assert "--negatives N needs --run RUN" in err
