"""The answer-level analysis of the rescoring report (the paper's Section 5.5, Appendix E)
on a hand-made bundle, every figure worked out by hand (correlations against scipy)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from bundle_support import make_bundle, mem
from tiap.rescore.api import rescore_bundle, write_outputs
from tiap.traces.bundle import Bundle

RESAMPLES = 400

# query -> (gold answer, the run's answer, F1 worked by hand, exact match)
ANSWERS = {
    "q1": ("red apple", "the red apple", 1.0, True),
    # P 1, R 1/2: F1 2/3
    "q2": ("blue car", "blue", 2 / 3, False),
    # one of two shared each way: P = R = 1/2, F1 1/2
    "q3": ("green tree", "tree house", 0.5, False),
    "q4": ("big dog", "cat", 0.0, False),
    "q5": ("small", "Small.", 1.0, True),
    # no gold answer: not scored
    "q6": ("", "anything", None, None),
}


def _bundle(with_answers: bool = True) -> Bundle:
    sources = [f"s{i}" for i in range(1, 7)]
    memories = [mem(f"raw-{s}", s, "raw") for s in [*sources, "s9"]]
    memories += [mem(f"fact-{s}", s, "fact") for s in sources[:4]]  # q5, q6: no Canonical
    junk = ["raw-s9"]
    rankings = {
        "q1": ["raw-s1", "fact-s1", *junk],  # both hit in the top 3
        "q2": ["raw-s2", *junk],  # Raw only
        "q3": [*junk, "fact-s3", "raw-s4", "raw-s3"],  # Canonical only (Raw at rank 4)
        "q4": [*junk],  # neither
        "q5": ["raw-s5"],  # Raw, no Canonical target: excluded from the Canonical comparisons
        "q6": [*junk],
    }
    bundle = make_bundle(
        {f"q{i}": [f"s{i}"] for i in range(1, 7)},
        {"st": memories},
        {"A": ("st", rankings), "B": ("st", rankings)},
        k=3,
    )
    bundle.queries = [
        q.model_copy(update={"answer": ANSWERS[q.query_id][0]}) for q in bundle.queries
    ]
    if with_answers:
        bundle.runs["A"] = [
            e.model_copy(update={"answer": ANSWERS[e.query_id][1]}) for e in bundle.runs["A"]
        ]
    return bundle


def _report(with_answers: bool = True):
    return rescore_bundle(_bundle(with_answers), ks=(3,), resamples=RESAMPLES, seed=7)


def test_answer_f1_and_exact_match_by_hand() -> None:
    answers = _report().report.answers
    assert answers is not None
    assert answers.runs_without_answers == ["B"]
    assert list(answers.runs) == ["A"]
    a = answers.runs["A"]
    assert (a.n_queries, a.n_answers, a.n_scored, a.n_no_gold) == (6, 6, 5, 1)
    # (1 + 2/3 + 1/2 + 0 + 1) / 5 = 19/30
    assert a.f1.n == 5
    assert a.f1.mean == pytest.approx(19 / 30)
    assert a.f1.ci_low is not None
    assert a.f1.ci_high is not None
    assert a.f1.ci_low < a.f1.mean < a.f1.ci_high
    assert (a.exact_match.n, a.exact_match.n_exact, a.exact_match.share) == (5, 2, 0.4)
    # Wilson 95% interval of 2/5 (statsmodels' proportion_confint, method "wilson")
    assert (a.exact_match.ci_low, a.exact_match.ci_high) == pytest.approx(
        (0.1176208, 0.7692757), abs=1e-6
    )


def test_correlations_are_scipys_and_the_best_target_has_the_highest_r() -> None:
    result = _report()
    a = result.report.answers.runs["A"]
    f1 = np.array([1.0, 2 / 3, 0.5, 0.0, 1.0])
    frame = result.per_query
    for target in ("raw", "source", "canonical"):
        rows = frame[(frame.run == "A") & (frame.target == target)].set_index("query_id")
        x = rows.loc[["q1", "q2", "q3", "q4", "q5"], "ndcg@3"].to_numpy()
        kept = ~np.isnan(x)
        c = a.correlations[target]
        assert c.n == int(kept.sum())
        assert c.pearson == pytest.approx(stats.pearsonr(x[kept], f1[kept])[0], abs=1e-9)
        assert c.spearman == pytest.approx(stats.spearmanr(x[kept], f1[kept])[0], abs=1e-9)
    # Canonical is empty for q5: four pairs; Raw and Source five
    assert (a.correlations["canonical"].n, a.correlations["raw"].n) == (4, 5)
    best = max(a.correlations, key=lambda t: a.correlations[t].pearson or -2)
    assert a.best_target == best
    # the margins: paired on q1..q4 (every target non-empty), best's r minus each other's
    matched = ["q1", "q2", "q3", "q4"]
    r = {}
    for target in ("raw", "source", "canonical"):
        rows = frame[(frame.run == "A") & (frame.target == target)].set_index("query_id")
        r[target] = stats.pearsonr(rows.loc[matched, "ndcg@3"].to_numpy(), f1[:4])[0]
    others = [t for t in ("raw", "source", "canonical") if t != best]
    assert sorted(a.best_margin) == sorted(others)
    for t in others:
        assert a.best_margin[t].n == 4
        assert a.best_margin[t].difference == pytest.approx(r[best] - r[t], abs=1e-9)


def test_hit_groups_and_the_coverage_gap_by_hand() -> None:
    report = _report().report
    a = report.answers.runs["A"]
    # over q1..q4 (both targets non-empty): one query per group
    assert {g: (m.n, m.mean) for g, m in a.hits.items()} == {
        "raw_only": (1, pytest.approx(2 / 3)),
        "canonical_only": (1, 0.5),
        "both": (1, 1.0),
        "neither": (1, 0.0),
    }
    assert all(m.ci_low is None for m in a.hits.values())  # one query: no interval
    # covered q1..q4: (1 + 2/3 + 1/2 + 0)/4 = 13/24; excluded q5: 1; gap -11/24
    cov = a.coverage
    assert (cov.n_covered, cov.n_excluded) == (4, 1)
    assert cov.f1_covered == pytest.approx(13 / 24)
    assert cov.f1_excluded == 1.0
    assert cov.gap == pytest.approx(-11 / 24)
    assert cov.ci_low is not None
    assert cov.ci_low <= cov.gap <= cov.ci_high
    raw_gap = report.coverage.runs["A"].gap["ndcg@3"]
    assert (cov.score_gap, cov.score_ci_low, cov.score_ci_high) == (
        raw_gap.mean,
        raw_gap.ci_low,
        raw_gap.ci_high,
    )


def test_the_reports_show_the_section_and_figures(tmp_path) -> None:
    paths = write_outputs(_report(), tmp_path)
    data = json.loads(paths["report_json"].read_text(encoding="utf-8"))
    assert data["answers"]["runs"]["A"]["n_scored"] == 5
    md = paths["report_md"].read_text(encoding="utf-8")
    assert "## Answers" in md
    assert "| A | 6 | 5 | 1 | 0 | 0.633 [" in md
    assert "Runs without answers (not in this section): B." in md
    html = paths["report_html"].read_text(encoding="utf-8")
    assert "vs answer F1: Pearson r per run and target" in html
    assert "Mean answer F1 by the target hit (hit@3)" in html


def test_without_answers_the_report_is_as_before(tmp_path) -> None:
    result = _report(with_answers=False)
    assert result.report.answers is None
    paths = write_outputs(result, tmp_path)
    assert "answers" not in json.loads(paths["report_json"].read_text(encoding="utf-8"))
    assert "Answers" not in paths["report_md"].read_text(encoding="utf-8")
    assert "answer F1" not in paths["report_html"].read_text(encoding="utf-8")


def test_the_terminal_summary_names_each_runs_answer_f1(tiap_cli, sample_bundle_dir, tmp_path):
    import shutil

    bundle = shutil.copytree(sample_bundle_dir, tmp_path / "bundle")
    tiap_cli("answers", "extract", str(bundle), "--run", "lexical-raw").ok()
    result = tiap_cli("rescore", str(bundle), "--out", str(tmp_path / "out"), "--resamples", "50")
    assert result.code == 0, result.err
    lines = [line for line in result.out.splitlines() if line.startswith("answers ")]
    assert len(lines) == 1
    assert lines[0].startswith("answers lexical-raw: answer F1 ")
    assert "best predictor of answer F1 on ndcg@10: " in lines[0]  # the sample's k is 10
    data = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert data["answers"]["runs_without_answers"] == ["lexical-facts1", "lexical-facts3"]


def test_the_answer_figures_render_in_a_browser(sample_bundle_dir, tmp_path) -> None:
    import shutil

    from support.browser import assert_renders
    from tiap.traces.bundle import read_bundle
    from tiap.traces.extractive import extract_answers, write_answers

    root = shutil.copytree(sample_bundle_dir, tmp_path / "bundle")
    bundle = read_bundle(root)
    for run in bundle.config.runs:
        write_answers(bundle, extract_answers(bundle, run))
    out = tmp_path / "out"
    write_outputs(rescore_bundle(read_bundle(root), resamples=RESAMPLES), out)
    report = assert_renders(out / "report.html", tmp_path / "answers.png", min_figures=11)
    labels = [box.label for box in report.svgs]
    assert any("vs answer F1: Pearson r per run and target" in label for label in labels)
    assert any(label.startswith("Mean answer F1 by the target hit") for label in labels)
