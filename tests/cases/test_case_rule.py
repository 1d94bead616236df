"""The contested-credit rule: ``both`` (the paper's Section 4.4, the default) and
``either`` (its Section 3.3): Raw misses in the top k while Source and Canonical both
give credit, or while Source or Canonical does."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from bundle_support import make_bundle, mem
from target_oracle import contested, first_ranks, target_sets
from tiap.cases.extract import (
    EITHER_RULE,
    PAPER_RULE,
    bundle_version,
    contested_definition,
    find_contested,
    rule_named,
)
from tiap.errors import TiapError
from tiap.traces import Bundle, read_bundle

# q1: a fact ranks first: both rules. q2: a summary (derived, not canonical) ranks
# first, the fact is past k: either only. q3: no canonical memory at all, a summary in
# the top k: either only (both: empty target). q4: the raw turn in the top k: neither.
# q5: nothing of the evidence in the top k: neither.
STORE = [
    *(mem(f"r{i}", f"s{i}", "raw") for i in range(1, 6)),
    mem("f1", "s1", "fact"),
    mem("f2", "s2", "fact"),
    mem("u2", "s2", "summary"),
    mem("u3", "s3", "summary"),
    mem("f4", "s4", "fact"),
    mem("f5", "s5", "fact"),
    *(mem(f"n{i}", "s9", "raw") for i in range(1, 4)),
]
QUERIES = {f"q{i}": [f"s{i}"] for i in range(1, 6)}
RANKINGS = {
    "q1": ["f1", "n1", "r1"],
    "q2": ["u2", "n1", "f2"],
    "q3": ["n1", "u3", "r3"],
    "q4": ["r4", "f4", "n1"],
    "q5": ["n1", "n2", "f5"],
}
K = 2


def _bundle() -> Bundle:
    return make_bundle(QUERIES, {"st": STORE}, {"A": ("st", RANKINGS)}, k=K)


def either_oracle(bundle: Bundle, k: int) -> list[tuple[str, str, str, int]]:
    """Section 3.3, one query at a time: no Raw member in the top k, a Source or a
    Canonical member there; the credited memory is the highest-ranked Canonical member
    in the top k, else the highest-ranked Source member."""
    out = []
    for run in bundle.config.runs:
        sets = target_sets(bundle, bundle.run_store(run))
        rankings = bundle.rankings(run)
        for q in bundle.queries:
            raw, source, canon = (sets[t][q.query_id] for t in ("raw", "source", "canonical"))
            ranks = first_ranks(rankings.get(q.query_id, []))
            top = {m for m, r in ranks.items() if r <= k}
            if not raw or top & raw or not (top & source or top & canon):
                continue
            pool = top & canon or top & source
            credited = min(pool, key=ranks.__getitem__)
            out.append((run, q.query_id, credited, ranks[credited]))
    return out


def test_both_and_either_on_the_hand_made_bundle() -> None:
    bundle = _bundle()
    both, both_report = find_contested(bundle)
    either, either_report = find_contested(bundle, rule=EITHER_RULE)
    assert [(c.query_id, c.memory_id, c.rank) for c in both] == [("q1", "f1", 1)]
    assert [(c.query_id, c.memory_id, c.rank) for c in either] == [
        ("q1", "f1", 1),
        ("q2", "u2", 1),
        ("q3", "u3", 2),
    ]
    # a case of both is the same case under either
    assert both[0].case_id == either[0].case_id
    assert (both_report.rule, either_report.rule) == ("both", "either")
    a, b = both_report.runs["A"], either_report.runs["A"]
    assert (a.empty_target, a.raw_credited, a.canonical_missed) == (1, 1, 2)  # q3; q4; q2, q5
    assert (b.empty_target, b.raw_credited, b.canonical_missed) == (0, 1, 1)  # -; q4; q5
    assert either_oracle(bundle, K) == [(c.run, c.query_id, c.memory_id, c.rank) for c in either]
    assert [(r, q, m, rank) for r, q, m, rank, _ in contested(bundle, K)] == [
        (c.run, c.query_id, c.memory_id, c.rank) for c in both
    ]


def test_the_rule_is_part_of_the_version() -> None:
    bundle = _bundle()
    # the paper's rule keeps the definition (and so the versions) it always had
    assert contested_definition("unit", K, PAPER_RULE)["rule"] == {
        "missed": ["raw"],
        "credited": ["source", "canonical"],
        "credit_from": "canonical",
    }
    assert contested_definition("unit", K, EITHER_RULE)["rule"]["credit"] == "any"
    both, _ = find_contested(bundle)
    either, _ = find_contested(bundle, rule=EITHER_RULE)
    v_both = bundle_version(bundle, both, K, PAPER_RULE)
    v_either = bundle_version(bundle, either, K, EITHER_RULE)
    assert v_both.fingerprint != v_either.fingerprint
    # even where both rules find the same cases, the versions differ
    same = bundle_version(bundle, both, K, EITHER_RULE)
    assert same.fingerprint != v_both.fingerprint


def test_rule_names_are_checked() -> None:
    assert rule_named("both") is PAPER_RULE
    assert rule_named("either") is EITHER_RULE
    with pytest.raises(TiapError, match=r"--rule must be one of both, either \(got 'any'\)"):
        rule_named("any")


def _pattern(per_query: Path, k: int) -> set[tuple[str, str]]:
    """(run, query) with hit@k 0 under raw and 1 under source (Canonical is part of
    Source, so 'Source or Canonical' is 'Source')."""
    hits: dict[tuple[str, str], dict[str, str]] = {}
    with per_query.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            hits.setdefault((row["run"], row["query_id"]), {})[row["target"]] = row[f"hit@{k}"]
    return {
        pair for pair, h in hits.items() if h["raw"] and float(h["raw"]) == 0 and h["source"]
        and float(h["source"]) == 1
    }  # fmt: skip


def test_cli_rule_on_the_sample(tiap_cli, sample_bundle_dir: Path, tmp_path: Path) -> None:
    bad = tiap_cli("cases", "extract", sample_bundle_dir, "--db", tmp_path / "x.sqlite",
                   "--rule", "any")  # fmt: skip
    assert bad.code == 2
    assert bad.err.strip() == "tiap: error: --rule must be one of both, either (got 'any')"
    assert not (tmp_path / "x.sqlite").exists()

    both_db, either_db = tmp_path / "both.sqlite", tmp_path / "either.sqlite"
    out = tiap_cli.ok("cases", "extract", sample_bundle_dir, "--db", both_db).out
    assert "rule both: Raw misses in the top k, Source and Canonical both give credit" in out
    done = tiap_cli.ok("cases", "extract", sample_bundle_dir, "--db", either_db,
                       "--rule", "either")  # fmt: skip
    assert "rule either: Raw misses in the top k, Source or Canonical gives credit" in done.out
    assert "(the paper's 3.3)" in done.out
    lines = tiap_cli.ok("cases", "list", "--db", either_db, "--json").out.splitlines()
    either = [json.loads(line) for line in lines]
    both_ids = {
        json.loads(line)["case_id"]
        for line in tiap_cli.ok("cases", "list", "--db", both_db, "--json").out.splitlines()
    }
    either_ids = {c["case_id"] for c in either}
    # the sample's stores hold raw turns and canonical facts only: Source credit without
    # Raw is Canonical credit, so both rules find the same cases (the hand-made bundle
    # above and LoCoMo's summaries are where they part)
    assert both_ids == either_ids
    # either is the hit pattern of per_query.csv: Raw 0, Source 1
    k = read_bundle(sample_bundle_dir).config.k
    tiap_cli.ok("rescore", sample_bundle_dir, "--out", tmp_path / "r", "--k", str(k),
                "--metrics", f"hit@{k}", "--resamples", "10")  # fmt: skip
    assert {(c["run"], c["query_id"]) for c in either} == _pattern(tmp_path / "r/per_query.csv", k)
    # the rule is recorded with the cases' version
    versions = json.loads(tiap_cli.ok("cases", "versions", "--db", either_db, "--json").out)
    (version,) = versions["versions"]
    assert version["definition"]["rule"]["credit"] == "any"
    # another rule is another version: refused without --replace-stale
    stale = tiap_cli("cases", "extract", sample_bundle_dir, "--db", both_db, "--rule", "either")
    assert stale.code == 2
    assert "--replace-stale" in stale.err
