"""LMEB/BEIR import: hand-made fixtures, candidate pools, attached runs, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.cli import main
from tiap.errors import InputError
from tiap.traces.bundle import read_bundle
from tiap.traces.lmeb import load_lmeb, scene_of

QUERIES = [
    {"id": "conv_26_q1", "text": "Which support group did Caroline go to?"},
    {"id": "conv_26_q2", "text": "What did Melanie paint?"},
    {"id": "conv_30_q1", "text": "Which trophy did Gina win?"},
    {"id": "conv_30_q2", "text": "A query without positive qrels"},
]
CORPUS = [
    {"id": "c26_1", "title": "", "text": "Caroline went to a support group."},
    {"id": "c26_2", "title": "Painting", "text": "Melanie painted a sunrise over a lake."},
    {"id": "c26_3", "title": "", "text": "Caroline likes the lake."},
    {"id": "c30_1", "title": "", "text": "Gina won a dance trophy."},
    {"id": "c30_2", "title": "", "text": "Jon opened a dance studio."},
]
QRELS = "conv_26_q1\tc26_1\t1\nconv_26_q2\tc26_2\t2\nconv_26_q2\tc26_3\t0\nconv_30_q1\tc30_1\t1\nconv_30_q2\tc30_2\t0\n"  # noqa: E501
CANDIDATES = [
    {"scene_id": "conv_26", "candidate_doc_ids": ["c26_1", "c26_2", "c26_3"]},
    {"scene_id": "conv_30", "candidate_doc_ids": ["c30_1", "c30_2"]},
]


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def lmeb_dir(tmp_path: Path) -> Path:
    """LMEB layout: corpus and candidates one level above the subset's queries and qrels."""
    top = tmp_path / "LoCoMo"
    sub = top / "single_hop"
    sub.mkdir(parents=True)
    _jsonl(sub / "queries.jsonl", QUERIES)
    (sub / "qrels.tsv").write_text(QRELS, encoding="utf-8")
    _jsonl(top / "corpus.jsonl", CORPUS)
    _jsonl(top / "candidates.jsonl", CANDIDATES)
    return sub


def test_scene_of_query() -> None:
    assert scene_of("conv_26_q1") == "conv_26"
    assert scene_of("single") == "single"


def test_corpus_items_are_their_own_sources_and_qrels_the_evidence(lmeb_dir: Path) -> None:
    ds = load_lmeb(lmeb_dir)
    src = {s.source_id: s for s in ds.sources}
    assert src["c26_2"].text == "Painting Melanie painted a sunrise over a lake."
    assert src["c26_1"].text == "Caroline went to a support group."
    q = {x.query_id: x for x in ds.queries}
    assert q["conv_26_q2"].evidence == ["c26_2"]  # score 0 is not evidence
    assert q["conv_26_q2"].metadata["qrels"] == {"c26_2": 2, "c26_3": 0}
    assert q["conv_26_q1"].metadata == {}
    assert q["conv_26_q1"].answer == ""
    assert q["conv_26_q1"].conversation_id == "conv_26"
    assert ds.excluded_queries == ["conv_30_q2"]
    assert [(i.kind, i.item) for i in ds.log.issues] == [("query_no_evidence", "conv_30_q2")]
    raw = ds.raw_memories()
    assert all(m.raw and m.source_ids == [m.memory_id] for m in raw)
    assert ds.candidate_pools == {
        "conv_26": frozenset({"c26_1", "c26_2", "c26_3"}),
        "conv_30": frozenset({"c30_1", "c30_2"}),
    }


def test_cli_build_with_candidates_and_an_attached_trec_run(
    tiap_cli, lmeb_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "system.trec"
    run.write_text(
        "conv_26_q1 Q0 c26_3 1 9.5 sys\nconv_26_q1 Q0 c26_1 2 8.0 sys\n"
        "conv_30_q1 Q0 c30_1 1 3.0 sys\nconv_30_q2 Q0 c30_2 1 1.0 sys\n"
    )
    out = tmp_path / "bundle"
    tiap_cli.ok("traces", "build", "lmeb", str(lmeb_dir), "--out", str(out), "--run", f"sys={run}")
    printed = capsys.readouterr().out
    assert "run bm25-raw: 3 queries ranked over 2 pools" in printed
    assert "run sys: 2 queries attached from system.trec" in printed
    bundle = read_bundle(out)
    assert bundle.config.runs["sys"].retriever == "external"
    assert bundle.rankings("sys") == {
        "conv_26_q1": ["c26_3", "c26_1"],
        "conv_30_q1": ["c30_1"],
    }
    bm25 = bundle.rankings("bm25-raw")
    # pools: conv_30 queries never see conv_26 documents
    assert set(bm25["conv_30_q1"]) <= {"c30_1", "c30_2"}
    assert bm25["conv_30_q1"][0] == "c30_1"
    report = json.loads((out / "build_report.json").read_text())
    assert report["issue_counts"] == {"query_no_evidence": 1, "run_query_excluded": 1}
    assert report["options"]["attached_runs"] == {"sys": "system.trec"}


def test_without_candidates_the_pool_is_the_whole_corpus(tiap_cli, tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    _jsonl(task / "queries.jsonl", QUERIES[:1])
    _jsonl(task / "corpus.jsonl", CORPUS)
    (task / "qrels.tsv").write_text("conv_26_q1\tc26_1\t1\n")
    out = tmp_path / "b"  # apart from the task (a bundle inside it is refused)
    tiap_cli.ok("traces", "build", "lmeb", str(task), "--out", str(out), "-q")
    ranking = read_bundle(out).rankings("bm25-raw")["conv_26_q1"]
    assert ranking[0] == "c26_1"
    assert "c26_3" in ranking


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("queries.jsonl", '{"id": "q1", "text": "x"}\n{"id": "q2", "text": \n', "queries.jsonl:2: malformed JSON"),  # noqa: E501
        ("queries.jsonl", '{"id": "q1"}\n', "queries.jsonl:1: missing field 'text'"),
        ("qrels.tsv", "conv_26_q1\tc26_1\n", "qrels.tsv:1: expected 3 tab-separated columns"),
        ("qrels.tsv", "conv_26_q1\tc26_1\t1\nconv_26_q1\tc26_2\thigh\n", "qrels.tsv:2: score 'high' is not an integer"),  # noqa: E501
        ("qrels.tsv", "query-id\tcorpus-id\tscore\n", "qrels.tsv:1: score 'score' is not an integer (qrels.tsv has no header row)"),  # noqa: E501
        ("qrels.tsv", "conv_99_q1\tc26_1\t1\n", "qrels.tsv:1: unknown query id 'conv_99_q1'"),
        ("qrels.tsv", "\nconv_26_q1\tnope\t1\n", "qrels.tsv:2: unknown corpus id 'nope'"),
        ("qrels.tsv", "conv_26_q1\tc26_1\t1\nconv_26_q1\tc26_1\t1\n", "qrels.tsv:2: pair (conv_26_q1, c26_1) listed twice"),  # noqa: E501
        ("../corpus.jsonl", '{"id": "c26_1", "text": "a"}\n{"id": "c26_1", "text": "b"}\n', "corpus.jsonl:2: duplicate corpus id 'c26_1'"),  # noqa: E501
        ("../candidates.jsonl", '{"scene_id": "conv_26", "candidate_doc_ids": ["zz"]}\n', "candidates.jsonl:1: scene 'conv_26' names unknown corpus id 'zz'"),  # noqa: E501
    ],
)  # fmt: skip
def test_bad_input_names_file_and_line(
    lmeb_dir: Path, file: str, content: str, message: str
) -> None:
    (lmeb_dir / file).write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_lmeb(lmeb_dir)
    assert message in str(err.value)


def test_cli_errors_are_one_line(
    lmeb_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (lmeb_dir / "qrels.tsv").write_text("conv_26_q1\tc26_1\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["traces", "build", "lmeb", str(lmeb_dir), "--out", str(tmp_path / "b")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith("tiap: error: ")
    assert "qrels.tsv:1:" in err

    (lmeb_dir / "qrels.tsv").write_text(QRELS)
    run = tmp_path / "r.trec"
    run.write_text("conv_26_q1 Q0 unknown_doc 1 1.0 x\n")
    with pytest.raises(SystemExit):
        main(
            [
                "traces",
                "build",
                "lmeb",
                str(lmeb_dir),
                "-o",
                str(tmp_path / "c"),
                "--run",
                f"r={run}",
            ]
        )
    assert "unknown memory id 'unknown_doc'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["traces", "build", "lmeb", str(lmeb_dir), "-o", str(tmp_path / "d"), "--run", "r"])
    assert "expected NAME=PATH" in capsys.readouterr().err


def test_out_dir_is_protected_and_force_replaces_the_whole_bundle(
    tiap_cli, lmeb_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "system.trec"
    run.write_text("conv_26_q1 Q0 c26_1 1 1.0 sys\n")
    out = tmp_path / "b"
    tiap_cli.ok("traces", "build", "lmeb", str(lmeb_dir), "-o", str(out), "-r", "none", "--run",
                f"sys={run}", "-q")  # fmt: skip
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["sys.jsonl"]
    with pytest.raises(SystemExit) as exit_info:
        main(["traces", "build", "lmeb", str(lmeb_dir), "-o", str(out), "-q"])
    assert exit_info.value.code == 2
    assert "use --force" in capsys.readouterr().err
    tiap_cli.ok("traces", "build", "lmeb", str(lmeb_dir), "-o", str(out), "-q", "--force")
    # the old run is gone, so the bundle reads back cleanly
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["bm25-raw.jsonl"]
    assert set(read_bundle(out).runs) == {"bm25-raw"}
