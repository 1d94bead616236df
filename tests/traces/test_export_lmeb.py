"""`tiap traces export lmeb`: a bundle as an LMEB/BEIR task directory, and back.

The sample bundle checks the files line by line; the real LoCoMo file makes the
round trip (build -> export -> ``traces build lmeb``) and checks that queries,
evidence, sources and even the BM25 rankings come back unchanged.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from tiap.cli import main
from tiap.errors import TiapError
from tiap.traces.bundle import Bundle, read_bundle
from tiap.traces.export import candidate_scenes, export_lmeb, subset_name
from tiap.traces.lmeb import load_lmeb, scene_of


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def sample(sample_bundle_dir: Path) -> Bundle:
    return read_bundle(sample_bundle_dir)


def test_files_for_lmeb_beir_and_tiap(sample: Bundle, tmp_path: Path) -> None:
    out = tmp_path / "task"
    summary = export_lmeb(sample, out)
    corpus = _jsonl(out / "corpus.jsonl")
    assert [c["_id"] for c in corpus] == list(sample.sources)
    assert all(c["id"] == c["_id"] and c["title"] == "" for c in corpus)
    assert [c["text"] for c in corpus] == [s.text for s in sample.sources.values()]
    queries = _jsonl(out / "queries.jsonl")
    assert [(q["_id"], q["id"], q["text"]) for q in queries] == [
        (q.query_id, q.query_id, q.question) for q in sample.queries
    ]
    rows = [line.split("\t") for line in (out / "qrels.tsv").read_text().splitlines()]
    assert rows == [[q.query_id, sid, "1"] for q in sample.queries for sid in q.evidence]
    beir = (out / "qrels" / "test.tsv").read_text().splitlines()
    assert beir[0] == "query-id\tcorpus-id\tscore"  # BEIR's loader skips one header line
    assert [line.split("\t") for line in beir[1:]] == rows
    with (out / "qrels" / "test.tsv").open(newline="") as fh:  # read as BEIR reads it
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        assert sum(int(r[2]) for r in reader) == len(rows)
    scenes = {s["scene_id"]: s["candidate_doc_ids"] for s in _jsonl(out / "candidates.jsonl")}
    for q in sample.queries:
        pool = scenes[scene_of(q.query_id)]  # LMEB's rule for a dialogue query's scene
        assert set(q.evidence) <= set(pool)
        assert all(sample.sources[sid].conversation_id == q.conversation_id for sid in pool)
    assert summary.corpus == len(corpus)
    assert summary.qrels == len(rows)
    assert summary.scenes == len(scenes)


def test_round_trip_of_the_sample(sample: Bundle, tmp_path: Path) -> None:
    export_lmeb(sample, tmp_path / "task")
    back = load_lmeb(tmp_path / "task")
    assert [q.query_id for q in back.queries] == [q.query_id for q in sample.queries]
    assert [q.question for q in back.queries] == [q.question for q in sample.queries]
    assert [q.evidence for q in back.queries] == [q.evidence for q in sample.queries]
    assert [(s.source_id, s.text) for s in back.sources] == [
        (s.source_id, s.text) for s in sample.sources.values()
    ]
    assert not back.excluded_queries


def test_category_subsets(sample: Bundle, tmp_path: Path) -> None:
    out = tmp_path / "task"
    summary = export_lmeb(sample, out, by_category=True)
    cats = {subset_name(q.category) for q in sample.queries}
    assert set(summary.subsets) == cats
    assert sum(summary.subsets.values()) == len(sample.queries)
    for name in cats:
        sub = load_lmeb(out / name)  # corpus and candidates one level up, as in LMEB
        want = [q for q in sample.queries if subset_name(q.category) == name]
        assert [q.query_id for q in sub.queries] == [q.query_id for q in want]
        assert len(sub.sources) == len(sample.sources)
    assert subset_name("multi-hop") == "multi_hop"
    assert subset_name("single-session-user") == "single_session_user"
    assert subset_name(None) == "uncategorised"


def test_refuses_a_non_empty_directory_without_force(sample: Bundle, tmp_path: Path) -> None:
    out = tmp_path / "task"
    export_lmeb(sample, out, by_category=True)
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(TiapError, match="not empty"):
        export_lmeb(sample, out)
    export_lmeb(sample, out, force=True)  # without --by-category: the old subsets go
    assert sorted(p.name for p in out.iterdir()) == [
        "candidates.jsonl",
        "corpus.jsonl",
        "notes.txt",
        "qrels",
        "qrels.tsv",
        "queries.jsonl",
    ]


def test_no_candidates_without_conversations(sample: Bundle, tmp_path: Path) -> None:
    first = sample.queries[0].model_copy(update={"conversation_id": None})
    bundle = Bundle(sample.config, [first, *sample.queries[1:]], sample.sources, {}, {})
    summary = export_lmeb(bundle, tmp_path / "task")
    assert not (tmp_path / "task" / "candidates.jsonl").exists()
    assert summary.scenes == 0
    assert "has no conversation" in summary.candidates_note
    scenes, _ = candidate_scenes(sample)
    assert scenes


def test_cli_export(tiap_cli, sample_bundle_dir: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "task"
    tiap_cli.ok("traces", "export", "lmeb", str(sample_bundle_dir), str(out), "--by-category")
    printed = capsys.readouterr().out
    assert f"wrote {out}:" in printed
    assert "category subsets" in printed
    with pytest.raises(SystemExit) as exit_info:
        main(["traces", "export", "lmeb", str(sample_bundle_dir), str(out)])
    assert exit_info.value.code == 2
    assert "not empty" in capsys.readouterr().err


@pytest.mark.shared_data
@pytest.mark.slow
def test_locomo_round_trip(tiap_cli, built, tmp_path: Path) -> None:
    bundle_dir = built.copy("locomo-raw", tmp_path / "locomo")
    original = read_bundle(bundle_dir)
    task = tmp_path / "task"
    tiap_cli.ok("traces", "export", "lmeb", str(bundle_dir), str(task))
    back_dir = tmp_path / "back"
    tiap_cli.ok("traces", "build", "lmeb", str(task), "-o", str(back_dir), "-q")
    back = read_bundle(back_dir)
    assert [q.query_id for q in back.queries] == [q.query_id for q in original.queries]
    assert len(back.queries) == 1971
    for a, b in zip(original.queries, back.queries, strict=True):
        assert b.question == a.question
        assert b.evidence == a.evidence
    assert [(s.source_id, s.text) for s in back.sources.values()] == [
        (s.source_id, s.text) for s in original.sources.values()
    ]
    # each query is ranked over its own conversation's turns again, so BM25 agrees exactly
    assert back.rankings("bm25-raw") == original.rankings("bm25-raw")
    shutil.rmtree(back_dir)
