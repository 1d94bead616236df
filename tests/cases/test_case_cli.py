"""`tiap cases` on the sample bundle, in process."""

from __future__ import annotations

import json
from pathlib import Path

from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace


def test_extract_sample_list_show(tiap_cli, tmp_path: Path, sample_bundle_dir: Path) -> None:
    db = str(tmp_path / "w.sqlite")
    out = tiap_cli.ok("cases", "extract", str(sample_bundle_dir), "--db", db).out
    assert "contested credits at k=10 in tiap-sample" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("lex")}
    assert set(rows) == {"lexical-raw", "lexical-facts3", "lexical-facts1"}
    again = tiap_cli.ok("cases", "extract", str(sample_bundle_dir), "--db", db, "--json").out
    report = json.loads(again)
    assert report["added"] == 0
    assert report["already_present"] == report["contested"]
    # The text table's columns: run store queries empty raw contested buckets...
    for run, counts in report["runs"].items():
        assert rows[run][2:6] == [
            str(counts["queries"]),
            str(counts["empty_target"]),
            str(counts["raw_credited"]),
            str(counts["contested"]),
        ]
    assert f"{report['contested']} new cases in {db}" in out

    out = tiap_cli.ok("cases", "sample", "--db", db, "--n", "10", "--seed", "1").out
    assert out.startswith(f"subset 'validation': 10 of {report['contested']} cases")
    assert "overlap 3" in out  # 36/115 of 10, rounded
    listed = tiap_cli.ok("cases", "list", "--db", db, "--subset", "validation").out
    lines = listed.strip().splitlines()
    assert lines[0].split()[:6] == ["case_id", "run", "query_id", "rank", "bucket", "overlap"]
    assert lines[-1] == "10 cases"
    assert sum(" yes " in f" {line} " for line in lines[1:-1]) == 3
    ids = [line.split()[0] for line in lines[1:-1]]
    with Workspace(db) as ws:
        assert ids == ws.case_ids(subset="validation")
        ws.add_label(LabelRecord(case_id=ids[0], rater="ann", rater_kind="human", label="partial"))

    shown = tiap_cli.ok("cases", "show", ids[0], "--db", db).out
    assert shown.startswith(f"case {ids[0]}")
    assert "ann [human]: partial" in shown
    data = json.loads(tiap_cli.ok("cases", "show", ids[0], "--db", db, "--json").out)
    assert data["case"]["case_id"] == ids[0]
    assert data["labels"][0]["label"] == "partial"
    assert data["case"]["evidence"][0]["text"] in shown

    jsonl = tiap_cli.ok("cases", "list", "--db", db, "--runs", "lexical-facts1", "--json").out
    cases = [json.loads(line) for line in jsonl.splitlines()]
    assert len(cases) == report["runs"]["lexical-facts1"]["contested"]
    assert {c["run"] for c in cases} == {"lexical-facts1"}

    subsets = json.loads(tiap_cli.ok("cases", "subsets", "--db", db, "--json").out)
    assert [(s["name"], s["size"], s["overlap"]) for s in subsets] == [("validation", 10, 3)]
    assert subsets[0]["params"]["kind"] == "validation"
    assert "validation: 10 cases, 3 in overlap" in tiap_cli.ok("cases", "subsets", "--db", db).out


def test_sample_from_runs_and_replace(tiap_cli, tmp_path: Path, sample_bundle_dir: Path) -> None:
    db = str(tmp_path / "w.sqlite")
    tiap_cli.ok("cases", "extract", str(sample_bundle_dir), "--db", db, "--runs", "lexical-facts3")
    with Workspace(db) as ws:
        pool = ws.count_cases()
        assert {c.run for c in ws.cases()} == {"lexical-facts3"}
    out = tiap_cli.ok(
        "cases", "sample", "--db", db, "--n", "115", "--from-runs", "lexical-facts3"
    ).out
    assert f"note: the pool has only {pool} cases (fewer than n=115): taking all" in out
    data = json.loads(
        tiap_cli.ok(
            "cases",
            "sample",
            "--db",
            db,
            "--n",
            "4",
            "--overlap",
            "2",
            "--replace",
            "--json",
        ).out
    )
    assert len(data["case_ids"]) == 4
    assert len(data["overlap_ids"]) == 2
    assert data["params"]["overlap"] == 2
    assert data["params"]["kind"] == "validation"
