"""Reading labels files: CSV, TSV and JSONL; every bad row names file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.agreement import labels_from_file
from tiap.errors import InputError
from tiap.rubric import Rubric


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_with_optional_columns(tmp_path: Path) -> None:
    p = write(
        tmp_path / "labels.csv",
        "case_id,rater,label,rater_kind,dataset,run,category,comment\n"
        "c1,gpt,supports,judge,locomo,bm25,2,ignored\n"
        "c1,alice,partial,human,,,,\n"
        "c2,gpt,,judge,longmemeval,dense,,\n"
        'c2,alice,"does_not_support",human,,,3,"a, quoted"\n',
    )
    t = labels_from_file(p)
    assert t.source == "file"
    assert t.case_ids == ["c1", "c2"]
    assert [(r.name, r.kind) for r in t.raters] == [("gpt", "judge"), ("alice", "human")]
    assert [(e.case_id, e.rater, e.label) for e in t.labels] == [
        ("c1", "gpt", "supports"),
        ("c1", "alice", "partial"),
        ("c2", "gpt", None),
        ("c2", "alice", "does_not_support"),
    ]
    assert t.cases[0].model_dump() == {
        "case_id": "c1",
        "dataset": "locomo",
        "run": "bm25",
        "category": "2",
    }
    assert t.cases[1].category == "3"


def test_jsonl_numbers_and_null_labels(tmp_path: Path) -> None:
    rows = [
        {"case_id": 1, "rater": "r1", "label": 2, "category": 4},
        {"case_id": 1, "rater": "r2", "label": None},
        {"case_id": 2, "rater": "r1", "label": "", "extra": [1, 2]},
    ]
    p = write(tmp_path / "l.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    t = labels_from_file(p)
    assert [(e.case_id, e.rater, e.label) for e in t.labels] == [
        ("1", "r1", "2"),
        ("1", "r2", None),
        ("2", "r1", None),
    ]
    assert t.cases[0].category == "4"
    assert all(r.kind is None for r in t.raters)


def test_tsv_bom_and_sniffing(tmp_path: Path) -> None:
    tsv = write(tmp_path / "l.tsv", "\ufeffcase_id\trater\tlabel\nc1\ta\tx\nc1\tb\ty\n")
    assert [e.label for e in labels_from_file(tsv).labels] == ["x", "y"]
    sniffed = write(tmp_path / "labels.txt", '{"case_id": "c", "rater": "a", "label": "x"}\n')
    assert labels_from_file(sniffed).labels[0].label == "x"
    csv_txt = write(tmp_path / "labels.data", "case_id,rater,label\nc,a,x\n")
    assert labels_from_file(csv_txt).labels[0].rater == "a"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("a.csv", "case_id,rater\nc1,a\n", "a.csv:1: header lacks column(s) label"),
        ("b.csv", "case_id,rater,label\nc1,a,x\nc1,b\n", "b.csv:3: fewer fields"),
        ("c.csv", "case_id,rater,label\nc1,a,x,extra\n", "c.csv:2: more fields"),
        (
            "d.csv",
            "case_id,rater,label\nc1,a,x\nc2,b,y\nc1,a,z\n",
            "d.csv:4: second label for case 'c1' by rater 'a' (first at line 2)",
        ),
        ("e.csv", "case_id,rater,label\n,a,x\n", "e.csv:2: field 'case_id'"),
        ("f.csv", "case_id,rater,label,rater_kind\nc1,a,x,robot\n", "f.csv:2: field 'rater_kind'"),
        (
            "g.csv",
            "case_id,rater,label,rater_kind\nc1,a,x,judge\nc2,a,x,human\n",
            "g.csv:3: rater 'a' is 'human' here but 'judge' at line 2",
        ),
        (
            "h.csv",
            "case_id,rater,label,run\nc1,a,x,bm25\nc1,b,x,dense\n",
            "h.csv:3: case 'c1' has run 'dense' here but 'bm25' at line 2",
        ),
        ("i.csv", "", "i.csv: empty file"),
        ("j.csv", "case_id,rater,label\n", "j.csv: no label rows"),
        (
            "k.jsonl",
            '{"case_id": "c", "rater": "a", "label": "x"}\n{"case_id": "c"\n',
            "k.jsonl:2: malformed JSON",
        ),
        ("l.jsonl", '["c", "a", "x"]\n', "l.jsonl:1: expected a JSON object"),
        ("m.jsonl", '{"case_id": "c", "label": "x"}\n', "m.jsonl:1: missing field 'rater'"),
        ("n.csv", "case_id,rater,label,label\nc,a,x,y\n", "n.csv:1: duplicate column(s) label"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    p = write(tmp_path / name, text)
    with pytest.raises(InputError) as err:
        labels_from_file(p)
    assert str(err.value).startswith(str(tmp_path / message.split(":")[0]))
    assert message in str(err.value)


def test_labels_outside_the_rubric_name_their_line(tmp_path: Path, rubric: Rubric) -> None:
    p = write(tmp_path / "l.csv", "case_id,rater,label\nc1,a,supports\nc1,b,maybe\n")
    with pytest.raises(
        InputError, match=r"l\.csv:3: label 'maybe' is not in rubric 'contested-credit'"
    ):
        labels_from_file(p, rubric)
    assert len(labels_from_file(p).labels) == 2  # without a rubric any label is fine


def test_missing_file_and_bad_encoding(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        labels_from_file(tmp_path / "nope.csv")
    p = tmp_path / "latin.csv"
    p.write_bytes("case_id,rater,label\nc1,a,caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        labels_from_file(p)
