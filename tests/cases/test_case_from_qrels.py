"""``tiap cases from-qrels``: qrels pairs as cases of kind ``qrels``, drawn by a
documented rule from LMEB/BEIR task directories, trees of them and bundles."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from support.lmeb import RUN_FILE, write_tree
from tiap.cases.from_qrels import from_qrels, qrels_case_id, qrels_cases
from tiap.cases.qrels_source import read_source
from tiap.cases.sample import sample_subset
from tiap.cases.workspace import Workspace
from tiap.errors import InputError, TiapError
from tiap.traces.bundle import read_bundle


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def graded_task(root: Path, *, queries: int = 6, docs: int = 30) -> Path:
    """A task whose query i has grade-2 documents d{i}-0.., grade-1 ones and a grade-0
    line; the corpus one level up (LMEB's layout), a TREC run ranking every document."""
    task = root / "Episodic" / "toy" / "graded"
    _jsonl(
        task / "queries.jsonl", [{"id": f"s_{i}_q", "text": f"query {i}"} for i in range(queries)]
    )
    _jsonl(
        task.parent / "corpus.jsonl",
        [{"id": f"d{j}", "title": f"T{j}", "text": f"document {j}"} for j in range(docs)],
    )
    lines = []
    for i in range(queries):
        lines += [f"s_{i}_q\td{i}\t2\n", f"s_{i}_q\td{i + 6}\t1\n", f"s_{i}_q\td{i + 12}\t1\n"]
        lines.append(f"s_{i}_q\td{i + 18}\t0\n")
    (task / "qrels.tsv").write_text("".join(lines), encoding="utf-8")
    run = [
        f"s_{i}_q Q0 d{j} {r + 1} {float(docs - r)} toy\n"
        for i in range(queries)
        for r, j in enumerate([24, i, 25, i + 6, 26, 27])
    ]
    (task / RUN_FILE).write_text("".join(run), encoding="utf-8")
    return task


# ------------------------------------------------------------------------ reading


def test_a_tree_names_each_dataset_by_its_path_and_its_memory_type(
    tmp_path: Path, raw_bundles: dict[str, Path]
) -> None:
    locomo = read_bundle(raw_bundles["locomo"])
    tree = write_tree(tmp_path / "lmeb", locomo, read_bundle(raw_bundles["longmemeval"]))
    src = read_source(tree.root)
    assert src.kind == "tree"
    assert [t.dataset for t in src.tasks] == sorted(tree.tasks)
    assert {t.memory_type for t in src.tasks} == {"Dialogue"}
    for task in src.tasks:
        written = tree.tasks[task.dataset]
        assert task.qrels == written.qrels  # every line, grade and order as written
        assert [q.query_id for q in task.queries] == list(written.queries)
    single, multi = (src.tasks[i] for i in (1, 0))
    assert single.dataset == "Dialogue/LoCoMo/single_hop"
    # the two LoCoMo tasks share the corpus one level up; the scene comes from candidates
    assert single.docs is multi.docs
    assert {q.scene for q in single.queries} == {"conv_26"}
    doc, turn = single.docs["conv-26:D1:3"], locomo.sources["conv-26:D1:3"]
    assert (doc.title, doc.text) == (f"{turn.speaker} · {turn.time}", turn.text)
    # a single task directory is one dataset named after the directory
    alone = read_source(tree.root / "Dialogue/LongMemEval/single_session_user")
    assert (alone.kind, [t.dataset for t in alone.tasks]) == ("task", ["single_session_user"])


def test_a_bundle_is_its_evidence_at_the_source_level(raw_bundles: dict[str, Path]) -> None:
    bundle = read_bundle(raw_bundles["locomo"])
    src = read_source(raw_bundles["locomo"])
    assert src.kind == "bundle"
    (task,) = src.tasks
    assert task.dataset == "locomo"
    assert task.qrels_lines == sum(len(set(q.evidence)) for q in bundle.queries)
    q = bundle.queries[0]
    assert task.qrels[q.query_id] == dict.fromkeys(q.evidence, 1)
    assert task.docs[q.evidence[0]].text == bundle.sources[q.evidence[0]].text


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("qrels.tsv", "s_0_q\td0\n", "qrels.tsv:1: expected 3 tab-separated columns"),
        ("qrels.tsv", "s_0_q\tnope\t1\n", "qrels.tsv:1: unknown corpus id 'nope'"),
        (
            "queries.jsonl",
            '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n',
            "queries.jsonl:2: duplicate query id 'a'",
        ),
    ],
)
def test_bad_input_names_the_file_and_line(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    task = graded_task(tmp_path)
    (task / name).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=where):
        read_source(task)


def test_a_directory_with_no_task_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "empty" / "x").mkdir(parents=True)
    with pytest.raises(TiapError, match="no task directory"):
        read_source(tmp_path / "empty")
    with pytest.raises(TiapError, match="not found"):
        read_source(tmp_path / "nowhere")


# ----------------------------------------------------------------------- sampling


def test_pairs_are_stratified_by_grade_and_spread_over_queries(tmp_path: Path) -> None:
    src = read_source(graded_task(tmp_path))
    cases, report = qrels_cases(src, per_dataset=10)
    counts = report.datasets["graded"]
    # 24 lines: 6 of grade 2, 12 of grade 1, 6 of grade 0; 10 by largest remainder
    assert counts.strata == {"grade 2": 6, "grade 1": 12, "grade 0": 6}
    assert counts.allocation == {"grade 2": 3, "grade 1": 5, "grade 0": 2}
    assert Counter(c.rank_bucket for c in cases) == {"grade 2": 3, "grade 1": 5, "grade 0": 2}
    assert all(c.kind == "qrels" and c.pair == "annotated" for c in cases)
    # grade 1 (two lines per query, 5 to take): one per query before any query gets two
    per_query = Counter(c.query_id for c in cases if c.grade == 1)
    assert sorted(per_query[f"s_{i}_q"] for i in range(6)) == [0, 1, 1, 1, 1, 1]
    # evenly spread positions of the 6 queries: floor((i + 0.5) * 6 / 3) -> 1, 3, 5
    assert sorted(c.query_id for c in cases if c.grade == 2) == ["s_1_q", "s_3_q", "s_5_q"]
    case = next(c for c in cases if c.memory_id == "d1")
    assert (case.question, case.title, case.memory_text, case.grade) == (
        "query 1",
        "T1",
        "document 1",
        2,
    )
    assert (case.dataset, case.memory_type, case.run, case.rank) == ("graded", None, "qrels", None)
    # read as a tree, the dataset is its path and the first part its memory type
    (tree_task,) = read_source(tmp_path).tasks
    assert (tree_task.dataset, tree_task.memory_type) == ("Episodic/toy/graded", "Episodic")


def test_the_draw_is_deterministic_and_the_seed_picks_within_queries(tmp_path: Path) -> None:
    src = read_source(graded_task(tmp_path))

    def ids(seed: int) -> list[str]:
        return [c.case_id for c in qrels_cases(src, per_dataset=12, seed=seed)[0]]

    assert ids(1337) == ids(1337)
    draws = {tuple(sorted(ids(seed))) for seed in range(8)}
    assert len(draws) > 1  # which grade-1 document of a query is drawn depends on the seed
    for seed in range(8):
        cases = qrels_cases(src, per_dataset=12, seed=seed)[0]
        assert Counter(c.rank_bucket for c in cases) == {"grade 2": 3, "grade 1": 6, "grade 0": 3}
        assert Counter(c.query_id for c in cases if c.grade == 1) == dict.fromkeys(
            [f"s_{i}_q" for i in range(6)], 1
        )


def test_case_ids_hash_dataset_query_and_document() -> None:
    key = json.dumps(["Dialogue/LoCoMo/single_hop", "conv_26_q0", "conv-26:D1:3"])
    expected = "q-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    assert qrels_case_id("Dialogue/LoCoMo/single_hop", "conv_26_q0", "conv-26:D1:3") == expected


def test_negatives_are_the_top_ranked_documents_without_a_positive_grade(tmp_path: Path) -> None:
    src = read_source(graded_task(tmp_path))
    cases, report = qrels_cases(src, per_dataset=24, negatives=9, run=RUN_FILE)
    negatives = [c for c in cases if c.pair == "negative"]
    counts = report.datasets["graded"]
    assert (counts.negatives, counts.negatives_pool, counts.run) == (9, 24, "run")
    # round 1: every query's best unjudged document (d24 at rank 1), then 3 of round 2
    assert Counter((c.memory_id, c.rank) for c in negatives) == {("d24", 1): 6, ("d25", 3): 3}
    assert all(
        c.grade is None and c.run == "run" and c.rank_bucket == "negative" for c in negatives
    )
    # annotated pairs a run ranks carry their rank; a grade-0 line drawn is not a negative
    ranked = {c.memory_id: c.rank for c in cases if c.pair == "annotated" and c.query_id == "s_0_q"}
    assert (ranked["d0"], ranked["d6"], ranked["d12"]) == (2, 4, None)


def test_negatives_include_graded_zero_lines_not_drawn_already(tmp_path: Path) -> None:
    task = graded_task(tmp_path)
    run = [f"s_{i}_q Q0 d{i + 18} 1 9.0 toy\n" for i in range(6)]  # the grade-0 lines
    (task / RUN_FILE).write_text("".join(run), encoding="utf-8")
    cases, _ = qrels_cases(read_source(task), per_dataset=20, negatives=6, run=RUN_FILE)
    drawn0 = {c.memory_id for c in cases if c.pair == "annotated" and c.grade == 0}
    negatives = {c.memory_id: c.grade for c in cases if c.pair == "negative"}
    assert negatives == {f"d{i + 18}": 0 for i in range(6) if f"d{i + 18}" not in drawn0}
    assert len({c.case_id for c in cases}) == len(cases)


def test_options_are_checked(tmp_path: Path) -> None:
    src = read_source(graded_task(tmp_path))
    for kwargs, message in [
        ({"per_dataset": 0}, r"--per-dataset must be at least 1 \(got 0\)"),
        ({"negatives": 3}, "--negatives N needs --run"),
        ({"run": RUN_FILE}, "--run is where --negatives N draws from"),
        ({"seed": -1}, "--seed must be a non-negative integer"),
        ({"negatives": 2, "run": "nope.trec"}, "--run nope.trec: no run of that name"),
    ]:
        with pytest.raises(TiapError, match=message):
            qrels_cases(src, **kwargs)  # type: ignore[arg-type]


def test_a_run_ranking_a_document_outside_the_corpus_names_the_file(tmp_path: Path) -> None:
    task = graded_task(tmp_path)
    (task / "bad.jsonl").write_text(json.dumps({"query_id": "s_0_q", "ranking": ["zz"]}) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:1: query 's_0_q' ranks 'zz'"):
        qrels_cases(read_source(task), negatives=1, run="bad.jsonl")


def test_a_bundle_run_by_name_ranks_sources(raw_bundles: dict[str, Path]) -> None:
    bundle = read_bundle(raw_bundles["longmemeval"])
    cases, report = qrels_cases(
        read_source(raw_bundles["longmemeval"]), per_dataset=30, negatives=40, run="bm25-raw"
    )
    negatives = [c for c in cases if c.pair == "negative"]
    assert report.datasets["longmemeval"].negatives == len(negatives) == 40
    evidence = {q.query_id: set(q.evidence) for q in bundle.queries}
    ranked = {e.query_id: e.ranking for e in bundle.runs["bm25-raw"]}
    for c in negatives:
        assert c.memory_id not in evidence[c.query_id]
        assert ranked[c.query_id].index(c.memory_id) + 1 >= c.rank  # sources at first place
        assert c.memory_text == bundle.sources[c.memory_id].text


# -------------------------------------------------------------------- workspace


def test_the_pairs_are_a_subset_and_drawing_again_changes_nothing(tmp_path: Path) -> None:
    task = graded_task(tmp_path)
    with Workspace(tmp_path / "w.sqlite") as ws:
        first = from_qrels(task, ws, per_dataset=8, negatives=2, run=RUN_FILE)
        assert (first.subset_status, first.added, first.cases) == ("created", 10, 10)
        params = ws.subset_params("qrels")
        assert params["kind"] == "qrels-sample"
        assert params["allocation"] == {
            "graded": {"grade 2": 2, "grade 1": 4, "grade 0": 2, "negative": 2}
        }
        assert params["rule"].startswith("per dataset: strata = qrels grades")
        again = from_qrels(task, ws, per_dataset=8, negatives=2, run=RUN_FILE)
        assert (again.subset_status, again.added, again.already_present) == ("unchanged", 0, 10)
        with pytest.raises(TiapError, match="subset 'qrels' exists and holds other pairs"):
            from_qrels(task, ws, per_dataset=9)
        replaced = from_qrels(task, ws, per_dataset=9, replace=True)
        assert replaced.subset_status == "replaced"
        assert len(ws.case_ids(subset="qrels")) == 9
        assert len(ws.events("cases.from_qrels")) == 3


def test_both_kinds_live_in_one_workspace_without_mixing(
    tmp_path: Path, sample_bundle_dir: Path
) -> None:
    from tiap.cases.extract import extract_cases

    with Workspace(tmp_path / "w.sqlite") as ws:
        extract_cases(read_bundle(sample_bundle_dir), ws)
        contested = ws.case_ids()
        from_qrels(graded_task(tmp_path), ws, per_dataset=24)
        kinds = ws.case_kinds()
        assert kinds == {"contested": len(contested), "qrels": 24}
        assert [c.case_id for c in ws.cases(kind="contested")] == contested  # ids unchanged
        assert all(c.case_id.startswith("q-") for c in ws.cases(kind="qrels"))
        assert ws.case_kinds(subset="qrels") == {"qrels": 24}
        with pytest.raises(TiapError, match="choose it with --kind"):
            sample_subset(ws, name="val", n=10)
        result = sample_subset(ws, name="val", n=12, overlap=4, kind="qrels")
        assert ws.case_kinds(subset="val") == {"qrels": 12}
        # strata: dataset x grade, in proportion (6, 12, 6 -> 3, 6, 3)
        assert result.allocation == {
            "graded · grade 2": 3,
            "graded · grade 1": 6,
            "graded · grade 0": 3,
        }
        assert ws.subset_params("val")["case_kind"] == "qrels"
        assert sum(result.overlap_allocation.values()) == 4
        # a contested draw is the same as before the qrels pairs came
        sub = sample_subset(ws, name="val-c", n=5, overlap=2, kind="contested")
        assert set(sub.case_ids) <= set(contested)
        assert len(sub.case_ids) == 5
