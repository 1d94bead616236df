"""TREC run files: trec_eval's ordering, errors with file and line, writing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.errors import InputError
from tiap.traces.models import RunEntry
from tiap.traces.trec import format_trec_run, read_trec_run, write_trec_run


def _write(tmp_path: Path, text: str, name: str = "run.trec") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_order_is_score_desc_then_docid_desc(tmp_path: Path) -> None:
    # The rank column is ignored (trec_eval ignores it): only scores and docids count.
    # Worked by hand for q1: scores 3.0 (d2), 1.5 (a, c, b tied), 0.5 (z)
    #   -> d2 first, then the tie broken by docid descending: c, b, a, then z.
    path = _write(
        tmp_path,
        "q1 Q0 a 1 1.5 t\n"
        "q1 Q0 z 2 0.5 t\n"
        "q1 Q0 c 3 1.5 t\n"
        "q1 Q0 d2 4 3.0 t\n"
        "q1 Q0 b 5 1.5 t\n"
        "\n"
        "q0 Q0 x 1 -1e3 t\n"
        "q0 Q0 y 1 2 t\n",
    )
    entries = read_trec_run(path)
    assert [e.query_id for e in entries] == ["q1", "q0"]  # first-seen query order
    assert entries[0].ranking == ["d2", "c", "b", "a", "z"]
    assert entries[0].scores == [3.0, 1.5, 1.5, 1.5, 0.5]
    assert entries[1].ranking == ["y", "x"]
    assert entries[1].scores == [2.0, -1000.0]


def test_tie_rule_matches_trec_eval(tmp_path: Path) -> None:
    """pytrec_eval (trec_eval's code) sees the same order: the reciprocal rank of each
    relevant document, evaluated alone, is 1 / its rank in our reading."""
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pytrec-eval-terrier (dev extra)")
    docs = {"d-a": 1.0, "d-b": 1.0, "d-c": 1.0, "d-10": 2.0, "d-9": 1.0, "e": 0.25}
    path = _write(
        tmp_path, "".join(f"q Q0 {d} {i + 1} {s} t\n" for i, (d, s) in enumerate(docs.items()))
    )
    ranking = read_trec_run(path)[0].ranking
    # By hand: d-10 (2.0), then the 1.0 ties by docid descending: d-c, d-b, d-a, d-9; then e.
    assert ranking == ["d-10", "d-c", "d-b", "d-a", "d-9", "e"]
    for doc in docs:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {doc: 1}}, {"recip_rank"})
        rr = evaluator.evaluate({"q": docs})["q"]["recip_rank"]
        assert rr == pytest.approx(1 / (ranking.index(doc) + 1)), doc


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("q Q0 a 1 1.0 t\nq Q0 b 2 1.0\n", 2, "expected 6 columns 'qid Q0 docid rank score tag'"),
        ("q Q0 a one 1.0 t\n", 1, "rank 'one' is not an integer"),
        ("q Q0 a 1 high t\n", 1, "score 'high' is not a number"),
        ("q Q0 a 1 1.0 t\n\nq Q0 a 2 0.5 t\n", 3, "docid 'a' listed twice for query 'q'"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_trec_run(path)
    assert str(info.value).startswith(f"{path}:{line}: {problem}")
    assert info.value.line == line


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_trec_run(tmp_path / "missing.trec")
    path = tmp_path / "latin1.trec"
    path.write_bytes("q Q0 caf\xe9 1 1.0 t\n".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_trec_run(path)


def test_write_keeps_strictly_decreasing_scores(tmp_path: Path) -> None:
    entry = RunEntry(query_id="q", ranking=["b", "a", "c"], scores=[0.9, 0.5, 0.25])
    assert format_trec_run([entry], tag="x") == (
        "q Q0 b 1 0.9 x\nq Q0 a 2 0.5 x\nq Q0 c 3 0.25 x\n"
    )


def test_write_replaces_ties_so_the_order_survives(tmp_path: Path) -> None:
    # Tied scores would be re-ordered by docid on reading: a, b would come back as b, a.
    entry = RunEntry(query_id="q", ranking=["a", "b", "c"], scores=[1.0, 1.0, 0.5])
    text = format_trec_run([entry])
    assert text == "q Q0 a 1 3.0 tiap\nq Q0 b 2 2.0 tiap\nq Q0 c 3 1.0 tiap\n"
    path = tmp_path / "out" / "run.trec"
    write_trec_run(path, [entry])
    assert read_trec_run(path)[0].ranking == ["a", "b", "c"]


def test_write_drops_repeats_and_handles_no_scores(tmp_path: Path) -> None:
    entries = [
        RunEntry(query_id="q1", ranking=["a", "b", "a", "c"], scores=[4.0, 3.0, 2.0, 1.0]),
        RunEntry(query_id="q2", ranking=["z", "y"]),
        RunEntry(query_id="q3", ranking=[]),
    ]
    text = format_trec_run(entries, tag="t")
    assert text.splitlines() == [
        "q1 Q0 a 1 4.0 t",
        "q1 Q0 b 2 3.0 t",
        "q1 Q0 c 3 1.0 t",
        "q2 Q0 z 1 2.0 t",
        "q2 Q0 y 2 1.0 t",
    ]
    path = tmp_path / "run.trec"
    write_trec_run(path, entries, tag="t")
    back = read_trec_run(path)
    assert [(e.query_id, e.ranking) for e in back] == [("q1", ["a", "b", "c"]), ("q2", ["z", "y"])]
    # Writing what was read gives the same bytes.
    write_trec_run(tmp_path / "again.trec", back, tag="t")
    assert (tmp_path / "again.trec").read_bytes() == path.read_bytes()
