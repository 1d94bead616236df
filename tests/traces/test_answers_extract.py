"""Extractive answers (`tiap answers extract`): the documented method on hand-made texts,
the run file written in place, what is refused, and answers mapped by `traces import`."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from support.locomo_sample import locomo_sample
from tiap.cases.extract import bundle_version, find_contested
from tiap.errors import InputError, TiapError
from tiap.traces.bundle import read_bundle
from tiap.traces.extractive import METHOD, extract_answer, extract_answers, sentences, write_answers
from tiap.traces.imports import SystemExport, import_bundle, load_mapping
from tiap.traces.imports.assemble import run_line
from tiap.traces.locomo import load_locomo


def test_sentences() -> None:
    assert sentences("Hi! I went to Paris. Was it fun?\nYes") == [
        "Hi!",
        "I went to Paris.",
        "Was it fun?",
        "Yes",
    ]
    assert sentences("  \n ") == []


def test_the_sentence_with_the_most_question_tokens_wins() -> None:
    question = "When did Caroline go to the support group?"
    texts = [
        "Hey! Good to see you.",  # no content token of the question
        "I went to a support group yesterday. It was powerful.",  # support, group: 2
        "Caroline went to the LGBTQ support group.",  # caroline, support, group: 3
    ]
    # the third memory's sentence shares the most, so it wins though ranked last
    assert extract_answer(question, texts) == "Caroline went to the LGBTQ support group."


def test_ties_go_to_the_better_ranked_memory_then_the_earlier_sentence() -> None:
    question = "What did Bob paint?"
    # each sentence shares one token (bob or paint, stemmed)
    texts = ["Nothing here. Bob laughed. Bob cried.", "He painted a lake."]
    assert extract_answer(question, texts) == "Bob laughed."
    assert extract_answer(question, texts[::-1]) == "He painted a lake."


def test_no_overlap_gives_the_top_memorys_first_sentence_and_no_memory_nothing() -> None:
    assert extract_answer("Where is Zed?", ["One. Two.", "Three."]) == "One."
    assert extract_answer("Where is Zed?", []) == ""


@pytest.fixture
def bundle_dir(sample_bundle_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(sample_bundle_dir, tmp_path / "bundle"))


def test_cli_writes_answers_into_the_run_file(tiap_cli, bundle_dir: Path) -> None:
    before = read_bundle(bundle_dir)
    cases, report = find_contested(before)
    version = bundle_version(before, cases, report.k).fingerprint
    other = (bundle_dir / "runs" / "lexical-raw.jsonl").read_bytes()

    result = tiap_cli(
        "answers", "extract", str(bundle_dir), "--run", "lexical-facts1", "--top", "3"
    )
    assert result.code == 0, result.err
    assert "extractive answers" in result.out
    # how they were made, recorded for rescore, with the run file's hash as written
    record = json.loads((bundle_dir / "answers" / "lexical-facts1.json").read_text("utf-8"))
    assert record["method"] == METHOD.format(top=3)
    assert record["n_answers"] == 37
    written = (bundle_dir / "runs" / "lexical-facts1.jsonl").read_bytes()
    assert record["run_file_sha256"] == hashlib.sha256(written).hexdigest()

    after = read_bundle(bundle_dir)
    store = after.memories("facts1")
    for entry, old in zip(after.runs["lexical-facts1"], before.runs["lexical-facts1"], strict=True):
        assert entry.ranking == old.ranking
        assert entry.scores == old.scores
        question = after.query_by_id[entry.query_id].question
        top = list(dict.fromkeys(entry.ranking))[:3]
        assert entry.answer == extract_answer(question, [store[m].text for m in top])
    # other runs untouched; the cases and the bundle version they record are unchanged
    assert (bundle_dir / "runs" / "lexical-raw.jsonl").read_bytes() == other
    cases_after, _ = find_contested(after)
    assert cases_after == cases
    assert bundle_version(after, cases_after, report.k).fingerprint == version

    # again: the run carries answers now; --replace overwrites them, byte for byte the same
    written = (bundle_dir / "runs" / "lexical-facts1.jsonl").read_bytes()
    again = tiap_cli("answers", "extract", str(bundle_dir), "--run", "lexical-facts1", "--top", "3")
    assert again.code == 2
    assert "already carries" in again.err
    assert "--replace" in again.err
    tiap_cli(
        "answers", "extract", str(bundle_dir), "-r", "lexical-facts1", "--top", "3", "--replace"
    ).ok()
    assert (bundle_dir / "runs" / "lexical-facts1.jsonl").read_bytes() == written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "nope"], "unknown run 'nope'"),
        (["--run", "lexical-raw", "--top", "0"], "--top must be at least 1"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(
    tiap_cli, bundle_dir: Path, args: list[str], message: str
) -> None:
    result = tiap_cli("answers", "extract", str(bundle_dir), *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_a_trec_run_cannot_carry_answers(bundle_dir: Path) -> None:
    entries = read_bundle(bundle_dir).runs["lexical-raw"]
    trec = bundle_dir / "runs" / "lexical-raw.trec"
    trec.write_text(
        "".join(
            f"{e.query_id} Q0 {m} {i + 1} {100 - i} t\n"
            for e in entries
            for i, m in enumerate(e.ranking)
        ),
        encoding="utf-8",
    )
    (bundle_dir / "runs" / "lexical-raw.jsonl").unlink()
    toml = (bundle_dir / "bundle.toml").read_text(encoding="utf-8")
    (bundle_dir / "bundle.toml").write_text(
        toml.replace('file = "runs/lexical-raw.jsonl"', 'file = "runs/lexical-raw.trec"'),
        encoding="utf-8",
    )
    bundle = read_bundle(bundle_dir)
    assert all(e.answer is None for e in bundle.runs["lexical-raw"])
    with pytest.raises(InputError, match="TREC run, which cannot carry answers"):
        write_answers(bundle, extract_answers(bundle, "lexical-raw"))


def test_an_old_run_line_reads_and_a_run_without_answers_is_written_as_before(
    bundle_dir: Path, tmp_path: Path
) -> None:
    from tiap.traces.bundle import write_bundle

    bundle = read_bundle(bundle_dir)
    write_bundle(bundle, tmp_path / "again")
    for name in bundle.runs:
        path = f"runs/{name}.jsonl"
        assert (tmp_path / "again" / path).read_bytes() == (bundle_dir / path).read_bytes()
        assert b'"answer"' not in (bundle_dir / path).read_bytes()


def test_refused_when_the_run_has_answers_and_no_replace(bundle_dir: Path) -> None:
    bundle = read_bundle(bundle_dir)
    write_answers(bundle, extract_answers(bundle, "lexical-raw"))
    with pytest.raises(TiapError, match="already carries"):
        extract_answers(read_bundle(bundle_dir), "lexical-raw")


def test_import_maps_the_answer_of_an_export(tmp_path: Path) -> None:
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps([locomo_sample()]), encoding="utf-8")
    ds = load_locomo(source)
    memories = tmp_path / "m.jsonl"
    memories.write_text(
        json.dumps({"memory_id": "t1", "text": "Ann adopted Rex", "source_ids": ["conv-1:D1:1"]})
        + "\n",
        encoding="utf-8",
    )
    search = tmp_path / "s.jsonl"
    search.write_text(
        json.dumps({"query_id": "conv-1:q0", "ranking": ["t1"], "answer": "a puppy"})
        + "\n"
        + json.dumps({"query_id": "conv-1:q1", "ranking": ["t1"]})
        + "\n",
        encoding="utf-8",
    )
    mapping = load_mapping("jsonl")
    result = import_bundle(ds, [SystemExport("sys", memories, mapping, "jsonl", {"sys": search})])
    answers = {e.query_id: e.answer for e in result.bundle.runs["sys"]}
    assert answers == {"conv-1:q0": "a puppy", "conv-1:q1": None}
    assert result.report.counts["sys.answers"] == 1
    assert run_line("sys", result.report.counts).endswith(", 1 with an answer")
    assert "answer" not in run_line("sys", {"sys.queries_ranked": 2})
    # a mapping without an answer path (mem0's) reads none
    assert load_mapping("mem0").search.answer == ""

    search.write_text(
        json.dumps({"query_id": "conv-1:q0", "ranking": ["t1"], "answer": ["a", "list"]}) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match="the answer at 'answer' is not text"):
        import_bundle(ds, [SystemExport("sys", memories, mapping, "jsonl", {"sys": search})])
