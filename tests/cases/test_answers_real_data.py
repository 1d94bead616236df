"""Answer correctness on real LongMemEval questions, end to end: a bundle of a few
questions of every type (abstention ones too) cut from the oracle file, extractive
answers, ``cases from-answers``, the offline panel, and the agreement report's share
of each run's answers judged correct, checked against the workspace's labels."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bundle_support import conversations
from tiap.cases import Workspace
from tiap.rubric.answer_criteria import CRITERIA
from tiap.stats import wilson_interval
from tiap.traces.build import BuildOptions, build_bundle
from tiap.traces.bundle import write_bundle
from tiap.traces.longmemeval import load_longmemeval

pytestmark = pytest.mark.shared_data

RUN = "bm25-raw"
PER_TYPE = 3


def _bundle(shared_data_dir: Path, out: Path) -> dict[str, str]:
    """A bundle of PER_TYPE questions of each type and PER_TYPE abstention questions
    (BM25 over raw turns); returns each question's expected criteria variant."""
    ds = load_longmemeval(shared_data_dir / "longmemeval" / "longmemeval_oracle.reconstructed.json")
    variants = {
        "single-session-user": "generic",
        "single-session-assistant": "generic",
        "multi-session": "generic",
        "temporal-reasoning": "temporal-reasoning",
        "knowledge-update": "knowledge-update",
        "single-session-preference": "preference",
    }
    picked: dict[str, str] = {}
    taken: Counter[str] = Counter()
    for q in ds.queries:
        group = "abstention" if q.query_id.endswith("_abs") else str(q.category)
        if taken[group] < PER_TYPE:
            taken[group] += 1
            picked[q.query_id] = variants.get(group, "abstention")
    assert set(taken.values()) == {PER_TYPE}
    assert len(taken) == 7
    cut = conversations(ds, set(picked))  # every question is its own conversation
    result = build_bundle(cut, BuildOptions(stores=["raw"], retrievers=["bm25"]))
    write_bundle(result.bundle, out)
    return picked


def test_answer_correctness_on_longmemeval(tiap_cli, shared_data_dir: Path, tmp_path: Path) -> None:
    bundle, db, report_dir = tmp_path / "bundle", tmp_path / "w.sqlite", tmp_path / "report"
    picked = _bundle(shared_data_dir, bundle)
    n = len(picked)
    tiap_cli.ok("answers", "extract", str(bundle), "--run", RUN)
    made = tiap_cli.ok(
        "cases", "from-answers", str(bundle), "--run", RUN, "--db", str(db), "--size", "14",
        "--json",
    )  # fmt: skip
    counts = json.loads(made.out)
    assert (counts["queries"], counts["cases"], counts["no_answer"]) == (n, n, 0)
    assert counts["variants"] == {
        "abstention": 3,
        "generic": 9,
        "knowledge-update": 3,
        "preference": 3,
        "temporal-reasoning": 3,
    }
    with Workspace.open_readonly(db) as ws:
        cases = ws.cases(kind="answer")
        subset = ws.cases(subset="validation")
    assert len(subset) == 14
    for case in cases:  # the criteria come from the question type and the id only
        assert case.criteria_variant == picked[case.query_id]
        assert case.prompt_fields()["criteria"] == CRITERIA[picked[case.query_id]]  # type: ignore[index]
    again = json.loads(
        tiap_cli.ok(
            "cases", "from-answers", str(bundle), "--run", RUN, "--db", str(db), "--size",
            "14", "--json",
        ).out
    )  # fmt: skip
    assert (again["added"], again["subset_status"]) == (0, "unchanged")

    tiap_cli.ok(
        "judge", "run", "--db", str(db), "--panel", "offline", "--rubric", "answer-correctness",
        "--subset", "validation",
    )  # fmt: skip
    result = tiap_cli(
        "agreement", "report", "--db", str(db), "--subset", "validation", "--out",
        str(report_dir),
    )  # fmt: skip
    assert result.code == 3  # 14 cases: fewer than the gate needs; the report is written
    figure = json.loads((report_dir / "report.json").read_text())["answer_correctness"]
    shown = figure["runs"][RUN]

    # the same figure from the stored labels: a strict majority of 3 of 5 judges
    with Workspace.open_readonly(db) as ws:
        labels = ws.latest_labels(case_ids=[c.case_id for c in subset], rater_kind="judge")
    votes: dict[str, Counter[str]] = {c.case_id: Counter() for c in subset}
    for lab in labels:
        if lab.label is not None:
            votes[lab.case_id][lab.label] += 1
    winners = [
        label
        for counter in votes.values()
        for label, k in counter.most_common(1)
        if sum(counter.values()) >= 3 and 2 * k > sum(counter.values())
    ]
    correct = winners.count("correct")
    assert (shown["cases"], shown["decided"], shown["correct"]) == (14, len(winners), correct)
    assert shown["undecided"] == 14 - len(winners)
    assert shown["ci"] == pytest.approx(list(wilson_interval(correct, len(winners))))
    # every judge declines a preference question: those are undecided
    preference = [c for c in subset if c.criteria_variant == "preference"]
    assert preference
    assert all(not votes[c.case_id] for c in preference)
    assert shown["undecided"] >= len(preference)
    md = (report_dir / "report.md").read_text()
    assert "## Answer correctness by run" in md
    assert f"| {RUN} | 14 | {len(winners)} | {14 - len(winners)} |" in md
