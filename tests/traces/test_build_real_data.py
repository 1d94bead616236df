"""`tiap traces build` on the real LoCoMo and LongMemEval files in shared/data.

Skipped only when that folder is absent. The full LoCoMo build runs once per
test session (BM25, every store), the dense build once (raw and observations), and
the byte-for-byte determinism check builds LoCoMo a second time.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bundle_support import conversations
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.build import BuildOptions, build_bundle
from tiap.traces.bundle import Bundle, read_bundle
from tiap.traces.locomo import load_locomo
from tiap.traces.longmemeval import load_longmemeval
from tiap.traces.report import BuildReport

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

ALL_STORES = ["raw", "observations", "parser-D1", "parser-D5", "parser-D8", "summaries"]


@pytest.fixture(scope="module")
def locomo_path(shared_data_dir: Path) -> Path:
    return shared_data_dir / "locomo" / "locomo10.json"


@pytest.fixture(scope="module")
def locomo_raw(locomo_path: Path) -> list[dict[str, Any]]:
    """The file itself, read independently of the adapter."""
    return json.loads(locomo_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def locomo(locomo_path: Path) -> DatasetTraces:
    return load_locomo(locomo_path)


@pytest.fixture(scope="module")
def locomo_bundle(built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built.copy("locomo", tmp_path_factory.mktemp("locomo") / "bundle")


@pytest.fixture(scope="module")
def locomo_read(locomo_bundle: Path) -> Bundle:
    return read_bundle(locomo_bundle)


def _issues(ds: DatasetTraces, kind: str) -> list[tuple[str, str | None]]:
    return [(i.item, i.value) for i in ds.log.issues if i.kind == kind]


# ------------------------------------------------------------------ LoCoMo reading


def test_locomo_counts(locomo: DatasetTraces, locomo_raw: list[dict[str, Any]]) -> None:
    c = locomo.counts
    assert c["conversations"] == 10
    assert c["sessions"] == 272
    assert c["turns"] == 5882
    assert len(locomo.sources) == 5882
    assert c["qa_items"] == 1986
    assert c["evidence_strings"] == 2815
    assert c["observations_read"] == 2541
    assert len(locomo.derived["observations"]) == 2541  # every observation resolves
    assert len(locomo.derived["summaries"]) == 272
    # 4 empty-evidence items + 11 exact repeats in conv-48
    assert len(locomo.excluded_queries) == 15
    assert len(locomo.queries) == 1971
    # categories: the file's codes, minus the excluded items, named
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    excluded = set(locomo.excluded_queries)
    want = Counter(
        names[qa["category"]]
        for s in locomo_raw
        for i, qa in enumerate(s["qa"])
        if f"{s['sample_id']}:q{i}" not in excluded
    )
    assert Counter(q.category for q in locomo.queries) == want
    assert want["open-domain"] == 96 - 4
    assert sum(" [shares an image: " in s.text for s in locomo.sources) == 1226
    assert locomo.input_sha256 == (
        "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
    )


def test_locomo_evidence_quirks(locomo: DatasetTraces) -> None:
    q = {x.query_id: x for x in locomo.queries}
    assert q["conv-26:q37"].evidence == ["conv-26:D8:6", "conv-26:D9:17"]
    assert ("conv-26:q37", "D8:6; D9:17") in _issues(locomo, "evidence_split")
    # conv-49 q31, q38, q46 pack space-separated ids
    assert q["conv-49:q31"].evidence == ["conv-49:D9:1", "conv-49:D4:4", "conv-49:D4:6"]
    assert {i for i, _ in _issues(locomo, "evidence_split")} == {
        "conv-26:q37",
        "conv-49:q31",
        "conv-49:q38",
        "conv-49:q46",
    }
    assert _issues(locomo, "evidence_malformed") == [("conv-42:q88", "D")]
    assert q["conv-42:q88"].evidence == ["conv-42:D1:18", "conv-42:D1:20"]
    assert "conv-43:D11:26" in q["conv-43:q18"].evidence
    assert q["conv-50:q69"].evidence == ["conv-50:D30:5"]
    assert _issues(locomo, "evidence_reformatted") == [
        ("conv-43:q18", "D:11:26"),
        ("conv-50:q69", "D30:05"),
    ]
    assert _issues(locomo, "evidence_unresolved") == [
        ("conv-42:q58", "D10:19"),
        ("conv-47:q38", "D4:36"),
    ]
    assert "conv-42:D10:19" not in q["conv-42:q58"].evidence
    assert len(q["conv-42:q58"].evidence) == 6
    assert q["conv-50:q5"].evidence == ["conv-50:D4:5", "conv-50:D5:5"]
    assert _issues(locomo, "evidence_duplicate") == [("conv-50:q5", "D4:5")]


def test_locomo_exclusions_duplicates_and_answers(locomo: DatasetTraces) -> None:
    no_evidence = [i for i, _ in _issues(locomo, "query_no_evidence")]
    assert no_evidence == ["conv-26:q30", "conv-26:q46", "conv-50:q39", "conv-50:q42"]
    dups = [(i.item, i.result) for i in locomo.log.issues if i.kind == "duplicate_question"]
    assert len(dups) == 11
    assert dups[0] == ("conv-48:q89", "conv-48:q16")
    assert dups[-1] == ("conv-48:q99", "conv-48:q74")
    assert [i for i, _ in dups] == [f"conv-48:q{n}" for n in range(89, 100)]
    repeated = [(i.item, i.result) for i in locomo.log.issues if i.kind == "repeated_question_text"]
    assert repeated == [("conv-30:q95", "conv-30:q61")]
    q = {x.query_id: x for x in locomo.queries}
    assert q["conv-30:q95"].answer == "a trophy"
    assert q["conv-30:q95"].category == "adversarial"
    assert q["conv-26:q1"].answer == "2022"
    assert locomo.log.counts["answer_not_text"] == 6
    assert locomo.log.counts["answer_from_adversarial"] == 446
    assert "answer_field" in q["conv-26:q167"].metadata
    assert "answer_field" in q["conv-26:q178"].metadata
    date_only = [i for i, _ in _issues(locomo, "session_without_turns")]
    assert date_only == [f"conv-26:S{n}" for n in range(20, 36)]


def test_locomo_observation_lineage_checked_by_hand(locomo: DatasetTraces) -> None:
    """Facts and turn ids read off locomo10.json by hand."""
    by_text = {m.text: m for m in locomo.derived["observations"]}
    cases = {
        "Caroline attended an LGBTQ support group recently and found the transgender stories "
        "inspiring.": ["conv-26:D1:3"],
        "Melanie is currently managing kids and work and finds it overwhelming.": ["conv-26:D1:2"],
        "Jon is working on opening a dance studio, with the official opening night being "
        "tomorrow.": ["conv-30:D15:3", "conv-30:D15:5"],
        "Andrew shared photos of a national park, a trail, and a dog with Audrey during the "
        "conversation.": ["conv-44:D26:14", "conv-44:D26:34", "conv-44:D26:42"],
        "Deborah has two cats named Luna and Max, the latter being her mother's cat.": [
            "conv-48:D22:21",
            "conv-48:D22:23",
        ],
    }
    for text, sources in cases.items():
        assert by_text[text].source_ids == sources
        assert by_text[text].canonical
        assert not by_text[text].raw
    first = locomo.derived["observations"][0]
    assert first.memory_id == "conv-26:obs:1"
    assert first.source_ids == ["conv-26:D1:3"]
    assert locomo.log.counts["observation_split"] == 15


def test_locomo_summaries_link_every_turn_of_their_session(
    locomo: DatasetTraces, locomo_raw: list[dict[str, Any]]
) -> None:
    conv26 = locomo_raw[0]["conversation"]
    summ = {m.memory_id: m for m in locomo.derived["summaries"]}
    s1 = summ["conv-26:summary:1"]
    assert s1.source_ids == [f"conv-26:{t['dia_id']}" for t in conv26["session_1"]]
    assert s1.text == locomo_raw[0]["session_summary"]["session_1_summary"]
    assert not s1.canonical
    assert not s1.raw


# ------------------------------------------------------------------ LoCoMo bundle


def test_locomo_bundle_is_complete_and_valid(locomo_read: Bundle, locomo_bundle: Path) -> None:
    b = locomo_read
    assert b.config.dataset == "locomo"
    assert b.config.k == 60
    assert len(b.queries) == 1971
    assert len(b.sources) == 5882
    sizes = {n: len(m) for n, m in b.stores.items()}
    assert set(sizes) == set(ALL_STORES)
    assert sizes["raw"] == 5882
    assert sizes["observations"] == 5882 + 2541
    assert sizes["summaries"] == 5882 + 272
    assert sizes["parser-D1"] < sizes["parser-D5"] <= sizes["parser-D8"]
    assert sizes["parser-D1"] - 5882 <= 5882  # at most one fact per turn
    for name in ALL_STORES:
        raw = [m for m in b.stores[name] if m.raw]
        assert len(raw) == 5882  # every store holds the raw turns
    assert set(b.runs) == {f"bm25-{s}" for s in ALL_STORES}
    for n in (1, 5, 8):
        rc = b.config.runs[f"bm25-parser-D{n}"]
        assert rc.store == f"parser-D{n}"
        assert rc.retriever == "bm25"
        assert rc.config["parser_max_facts"] == n
    for run, entries in b.runs.items():
        assert len(entries) == 1971
        for e in entries:
            assert len(e.ranking) <= 60
            conv = e.query_id.split(":")[0]
            assert all(mid.startswith(conv + ":") for mid in e.ranking), run
            assert e.scores == sorted(e.scores or [], reverse=True)
    # the parser's facts are linked to their turn
    facts = [m for m in b.stores["parser-D5"] if not m.raw]
    assert all(m.canonical and m.source_ids == [m.memory_id.split("#")[0]] for m in facts)
    report = BuildReport.model_validate_json((locomo_bundle / "build_report.json").read_text())
    assert report.counts["queries"] == 1971
    assert report.excluded_queries[:2] == ["conv-26:q30", "conv-26:q46"]
    assert report.stores == sizes
    assert report.issue_counts["duplicate_question"] == 11
    assert set(report.rules) == set(report.issue_counts)


def test_bm25_finds_the_evidence_often(locomo_read: Bundle) -> None:
    """A sanity floor for real retrieval: the gold turn is in the raw top 60 for most queries."""
    rankings = locomo_read.rankings("bm25-raw")
    hits = [bool(set(q.evidence) & set(rankings[q.query_id])) for q in locomo_read.queries]
    assert sum(hits) / len(hits) > 0.6


def test_build_is_byte_identical_twice(
    tiap_cli, locomo_path: Path, locomo_bundle: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    tiap_cli.ok("traces", "build", "locomo", str(locomo_path), "--out", str(again), "-q")
    first = sorted(p.relative_to(locomo_bundle) for p in locomo_bundle.rglob("*") if p.is_file())
    second = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert first == second
    assert len(first) == 4 + 6 + 6
    for rel in first:
        assert (locomo_bundle / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_dense_runs_on_real_data(locomo: DatasetTraces, require_extra) -> None:
    """Dense retrieval on one real LoCoMo conversation (a tenth of the file: the
    embedding of every turn of all ten takes a minute on two cores and shows nothing
    more)."""
    require_extra("sentence_transformers", "dense")
    one = conversations(locomo, {"conv-26"})
    assert 0 < len(one.queries) < len(locomo.queries) / 5
    options = BuildOptions(stores=["raw", "observations"], retrievers=["dense"])
    result = build_bundle(one, options)
    b = result.bundle
    assert set(b.runs) == {"dense-raw", "dense-observations"}
    assert b.config.runs["dense-raw"].config["model"] == "all-MiniLM-L6-v2"
    rankings = b.rankings("dense-raw")
    for e in b.runs["dense-raw"]:
        assert len(e.ranking) == 60  # every conversation has more than 60 turns
        assert e.scores == sorted(e.scores or [], reverse=True)
    hits = [bool(set(q.evidence) & set(rankings[q.query_id])) for q in b.queries]
    assert sum(hits) / len(hits) > 0.6
    assert any(m.startswith("conv-26:obs:") for m in b.rankings("dense-observations")["conv-26:q0"])


def test_rescore_runs_on_the_built_bundle(tiap_cli, locomo_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "rescore"
    tiap_cli.ok("rescore", str(locomo_bundle), "--out", str(out))
    assert (out / "report.md").is_file()
    assert json.loads((out / "report.json").read_text())
    with (out / "per_query.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {"run", "query_id", "target", "target_size"} <= set(rows[0])
    assert {r["run"] for r in rows} == {f"bm25-{s}" for s in ALL_STORES}
    assert {r["target"] for r in rows} == {"raw", "source", "canonical"}


# ------------------------------------------------------------------ LongMemEval


def test_longmemeval_oracle(shared_data_dir: Path) -> None:
    path = shared_data_dir / "longmemeval" / "longmemeval_oracle.reconstructed.json"
    ds = load_longmemeval(path)
    assert ds.counts["records"] == 500
    assert ds.counts["turns"] == 10960
    assert len(ds.sources) == 10960
    assert ds.counts["session_slots"] == 948
    assert ds.counts["abstention_questions"] == 30
    # 21 questions have no flagged turn, all abstention: excluded and listed
    assert len(ds.excluded_queries) == 21
    assert all(q.endswith("_abs") for q in ds.excluded_queries)
    assert len(ds.queries) == 479
    assert sum(q.abstention for q in ds.queries) == 9
    assert ds.log.counts["answer_session_unflagged"] == 94
    assert ds.log.counts["answer_not_text"] == 32
    assert sum(len(q.evidence) for q in ds.queries) == 896  # every flagged turn
    assert ds.queries[0].query_id == "gpt4_2655b836"
    fallback = load_longmemeval(path, evidence="has-answer-or-sessions")
    assert len(fallback.queries) == 500
    assert fallback.log.counts["evidence_fallback"] == 21
    assert Counter(q.category for q in fallback.queries) == {
        "single-session-user": 70,
        "single-session-assistant": 56,
        "single-session-preference": 30,
        "temporal-reasoning": 133,
        "knowledge-update": 78,
        "multi-session": 133,
    }
    sessions = load_longmemeval(path, granularity="session", evidence="answer-sessions")
    assert len(sessions.sources) == 948
    assert len(sessions.queries) == 500


def test_longmemeval_s_sample_build(tiap_cli, shared_data_dir: Path, tmp_path: Path) -> None:
    path = shared_data_dir / "longmemeval" / "longmemeval_s_cleaned.sample7.json"
    out = tmp_path / "s"
    tiap_cli.ok("traces", "build", "longmemeval", str(path), "-o", str(out), "-s", "raw", "-s",
                "parser-D5", "-q")  # fmt: skip
    b = read_bundle(out)
    assert b.config.metadata["evidence"] == "has-answer"
    assert b.config.metadata["granularity"] == "turn"
    assert len(b.sources) == 3512
    assert [q.query_id for q in b.queries] == [
        "e47becba",
        "0a995998",
        "8a2466db",
        "gpt4_59149c77",
        "6a1eabeb",
        "7161e7e2",
    ]  # 0862e8bf_abs has no flagged turn
    for run in ("bm25-raw", "bm25-parser-D5"):
        for qid, ranking in b.rankings(run).items():
            assert len(ranking) == 60
            assert all(m.startswith(qid + ":") for m in ranking)  # its own haystack only
