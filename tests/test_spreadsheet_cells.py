"""CSV and TSV files tiap writes never hold a cell a spreadsheet would run as a formula.

A rater name ``=HYPERLINK(...)``, a note ``@SUM(...)``, a judge's out-of-rubric reply
kept as a reason ``-2+3+cmd|' /C calc'!A0``, a query id ``+x`` were written as they
were: opened in a spreadsheet they ran. Every such cell now gets a leading single
quote (:mod:`tiap.cells`); a cell that is a number (``-0.5``) is left as it is; and
tiap's readers remove the quote again, so exports round-trip.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from bundle_support import make_bundle, mem
from fuzz_support import workspace_with_cases
from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.cells import FORMULA_STARTS, neutral, restore

HOSTILE = [
    '=HYPERLINK("http://x","y")',
    "+1+2",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
    "'=already quoted",
    "''@twice",
]


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+x", "'+x"),
        ("-x", "'-x"),
        ("@x", "'@x"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("'=x", "''=x"),  # a quote already there stays: restore removes one only
        ("''-x", "'''-x"),
        # numbers are not formulas
        ("-0.5", "-0.5"),
        ("+3", "+3"),
        ("-1e-05", "-1e-05"),
        ("-.5", "-.5"),
        ("'-0.5", "''-0.5"),  # text that starts with a quote is not a number
        # neither is anything else
        ("x=1", "x=1"),
        (" =1", " =1"),
        ("'", "'"),
        ("'x", "'x"),
        ("", ""),
        ("-", "'-"),
        ("-1-1", "'-1-1"),
        ("-inf", "'-inf"),
    ],
)
def test_the_rule(text: str, cell: str) -> None:
    assert neutral(text) == cell
    assert restore(cell) == text


def test_restore_undoes_neutral_for_every_text() -> None:
    rng = random.Random(7)
    alphabet = ["'", "=", "+", "-", "@", "\t", "\r", "0", "5", ".", "e", "a", " ", ","]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 7)))
        cell = neutral(text)
        assert restore(cell) == text, repr(text)
        # what a spreadsheet reads: no formula start, or a number
        first = cell[:1]
        assert first not in FORMULA_STARTS or cell == text, repr(cell)


def _workspace(path: Path) -> Path:
    workspace_with_cases(path, ["c0", "c1"])
    with Workspace(path) as ws:
        for i, name in enumerate(HOSTILE):
            ws.add_label(
                LabelRecord(
                    case_id=f"c{i % 2}",
                    rater=f"{name} {i}",
                    rater_kind="human",
                    label="supports",
                    note=HOSTILE[-1 - i],
                )
            )
        ws.add_label(
            LabelRecord(
                case_id="c0",
                rater="judge-a",
                rater_kind="judge",
                label=None,
                reason="-2+3+cmd|' /C calc'!A0",
            )
        )
    return path


def _cells(path: Path) -> list[list[str]]:
    delimiter = "\t" if path.suffix == ".tsv" else ","
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh, delimiter=delimiter))


def _no_formula(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            assert cell[:1] not in FORMULA_STARTS or neutral(cell) == cell, repr(cell)


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_labels_export_neutralises_and_import_round_trips(
    tiap_cli, tmp_path: Path, suffix: str
) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    out = tmp_path / f"labels{suffix}"
    code, _, err = tiap_cli("labels", "export", "--db", str(db), "--out", str(out))
    assert code == 0, err
    rows = _cells(out)
    _no_formula(rows)
    header = rows[0]
    raters = [r[header.index("rater")] for r in rows[1:]]
    assert '\'=HYPERLINK("http://x","y") 0' in raters
    assert "''=already quoted 6" in raters  # one quote more, not two
    reasons = [r[header.index("reason")] for r in rows[1:] if r[header.index("reason")]]
    assert reasons == ["'-2+3+cmd|' /C calc'!A0"]
    # the import reads back exactly what the workspace holds (the people's rows)
    people = tmp_path / f"people{suffix}"
    export = ["labels", "export", "--db", str(db), "--out", str(people), "--rater-kind", "human"]
    assert tiap_cli(export)[0] == 0
    other = workspace_with_cases(tmp_path / "other.sqlite", ["c0", "c1"])
    args = ["labels", "import", str(people), "--db", str(other), "--rater-kind", "human"]
    code, _, err = tiap_cli(args)
    assert code == 0, err
    with Workspace.open_readonly(db) as a, Workspace.open_readonly(other) as b:
        mine = {(r.case_id, r.rater, r.note) for r in a.latest_labels(rater_kind="human")}
        theirs = {(r.case_id, r.rater, r.note) for r in b.latest_labels(rater_kind="human")}
    # exactly, but for the tab and carriage return that lead two of them: a labels
    # file's reader strips the whitespace around every field
    assert theirs == {(c, r.strip(), (n or "").strip() or None) for c, r, n in mine}
    assert {r for _, r, _ in theirs} == {f"{n} {i}".strip() for i, n in enumerate(HOSTILE)}
    assert ("c0", '=HYPERLINK("http://x","y") 0', "''@twice") in theirs
    # and a report on the export names the raters as they are
    report = tmp_path / "report"
    code, _, err = tiap_cli(
        "agreement",
        "report",
        "--labels",
        str(out),
        "--out",
        str(report),
        "--resamples",
        "0",
    )
    assert code == 0, err
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    names = {r["name"] for r in data["raters"]}
    assert {'=HYPERLINK("http://x","y") 0', "''@twice 7", "+1+2 1"} <= names


def test_a_jsonl_export_keeps_the_text(tiap_cli, tmp_path: Path) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    out = tmp_path / "labels.jsonl"
    code, _, err = tiap_cli("labels", "export", "--db", str(db), "--out", str(out))
    assert code == 0, err
    raters = {json.loads(line)["rater"] for line in out.read_text(encoding="utf-8").splitlines()}
    assert '=HYPERLINK("http://x","y") 0' in raters


def test_per_query_csv_quotes_text_ids_and_keeps_numbers(tiap_cli, tmp_path: Path) -> None:
    from tiap.traces.bundle import write_bundle

    queries = {"=1+1": ["s1"], "@q": ["s2"], "-3": ["s3"], "-0.5": ["s1"], "+x": ["s2"]}
    store = [mem("r1", "s1", "raw"), mem("f1", "s1", "canonical"), mem("f2", "s2", "canonical"),
             mem("r3", "s3", "raw")]  # fmt: skip
    rankings = {q: ["f1", "f2", "r3"] for q in queries}
    bundle = make_bundle(queries, {"st": store}, {"r": ("st", rankings)}, k=2)
    root = tmp_path / "b"
    write_bundle(bundle, root)
    out = tmp_path / "out"
    code, _, err = tiap_cli(
        "rescore", str(root), "--out", str(out), "--k", "2", "--resamples", "10"
    )
    assert code == 0, err
    rows = _cells(out / "per_query.csv")
    _no_formula(rows)
    ids = list(dict.fromkeys(r[1] for r in rows[1:]))
    assert ids == ["'=1+1", "'@q", "-3", "-0.5", "'+x"]
    values = [v for r in rows[1:] for v in r[4:] if v]
    assert values
    assert all(repr(float(v)) == v and 0.0 <= float(v) <= 1.0 for v in values)  # numbers
    # the text is the text again once the quote is removed
    assert [restore(i) for i in ids] == list(queries)
    assert b"\r" not in (out / "per_query.csv").read_bytes()


def test_qrels_exports_quote_ids_and_tiap_reads_them_back(tiap_cli, tmp_path: Path) -> None:
    from tiap.traces.bundle import read_bundle, write_bundle

    queries = {"=q1": ["@s1"], "q2": ["-s2"], "-7": ["s3"]}
    store = [mem("m1", "@s1", "raw"), mem("m2", "-s2", "raw"), mem("m3", "s3", "raw")]
    bundle = make_bundle(queries, {"st": store}, {"r": ("st", {q: ["m1"] for q in queries})})
    root = tmp_path / "b"
    write_bundle(bundle, root)
    task = tmp_path / "task"
    code, out, err = tiap_cli("traces", "export", "lmeb", str(root), str(task))
    assert code == 0, err
    assert "note: 3 ids begin like a spreadsheet formula" in out
    qrels = (task / "qrels.tsv").read_text(encoding="utf-8").splitlines()
    assert qrels == ["'=q1\t'@s1\t1", "q2\t'-s2\t1", "-7\ts3\t1"]
    assert (task / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:] == qrels
    # corpus.jsonl and queries.jsonl keep the ids exactly; the build reads them back
    built = tmp_path / "built"
    code, _, err = tiap_cli(
        "traces", "build", "lmeb", str(task), "--out", str(built), "-r", "none", "-q"
    )
    assert code == 0, err
    assert {q.query_id: q.evidence for q in read_bundle(built).queries} == queries
