"""Answers on the real LoCoMo bundle (BM25 runs, built once per session): extractive
answers for two runs, then the rescoring report's answer-level figures checked against an
independent transcription of LoCoMo's evaluation and scipy."""

from __future__ import annotations

import re
import string
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from nltk.stem import PorterStemmer
from scipy import stats

from tiap.rescore.api import rescore_bundle
from tiap.traces.bundle import read_bundle
from tiap.traces.extractive import extract_answers, write_answers

pytestmark = [pytest.mark.shared_data]

RUNS = ("bm25-raw", "bm25-observations")
_PS = PorterStemmer()


def _locomo_normalize(s: str) -> str:
    # LoCoMo's task_eval/evaluation.py, normalize_answer, step by step
    s = s.replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the|and)\b", " ", s)
    return " ".join(s.split())


def _locomo_f1_score(prediction: str, truth: str) -> float:
    p = [_PS.stem(w) for w in _locomo_normalize(prediction).split()]
    g = [_PS.stem(w) for w in _locomo_normalize(truth).split()]
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _locomo_qa(prediction: str, answer: str, category: int) -> float:
    # LoCoMo's eval_question_answering, per category
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category in (2, 3, 4):
        return _locomo_f1_score(prediction, answer)
    if category == 1:
        preds = [p.strip() for p in prediction.split(",")]
        golds = [g.strip() for g in answer.split(",")]
        return float(np.mean([max(_locomo_f1_score(p, g) for p in preds) for g in golds]))
    low = prediction.lower()
    return 1.0 if "no information available" in low or "not mentioned" in low else 0.0


def test_extractive_answers_on_locomo(built, tmp_path: Path) -> None:
    root = built.copy("locomo", tmp_path / "locomo")
    bundle = read_bundle(root)
    for run in RUNS:
        write_answers(bundle, extract_answers(bundle, run))
    bundle = read_bundle(root)
    result = rescore_bundle(bundle, runs=list(RUNS), ks=(10,), metrics="ndcg", resamples=200)
    answers = result.report.answers
    assert answers is not None
    assert answers.measure == "ndcg@10"
    assert answers.hit_measure == "hit@10"
    assert sorted(answers.runs) == sorted(RUNS)
    assert answers.runs_without_answers == []
    frame = result.per_query
    for run in RUNS:
        a = answers.runs[run]
        given = {e.query_id: e.answer for e in bundle.runs[run]}
        scored = [q for q in bundle.queries if q.answer.strip() and q.query_id in given]
        f1 = np.array(
            [_locomo_qa(given[q.query_id], q.answer, q.metadata["category_code"]) for q in scored]
        )
        assert a.n_scored == len(scored) > 1500
        assert a.f1.mean == pytest.approx(f1.mean(), abs=1e-9)
        assert 0 < a.f1.mean < 0.5
        assert a.f1.ci_low < a.f1.mean < a.f1.ci_high
        ids = [q.query_id for q in scored]
        for target, c in a.correlations.items():
            rows = frame[(frame.run == run) & (frame.target == target)].set_index("query_id")
            x = rows.loc[ids, "ndcg@10"].to_numpy()
            kept = ~np.isnan(x)
            assert c.n == int(kept.sum())
            if c.n > 2:
                assert c.pearson == pytest.approx(stats.pearsonr(x[kept], f1[kept])[0], abs=1e-9)
                assert c.spearman == pytest.approx(stats.spearmanr(x[kept], f1[kept])[0], abs=1e-9)
    # the raw-only store has no Canonical target: no hit groups with queries, no gap
    raw = answers.runs["bm25-raw"]
    assert all(m.n == 0 for m in raw.hits.values())
    assert raw.coverage.gap is None
    obs = answers.runs["bm25-observations"]
    assert sum(m.n for m in obs.hits.values()) == obs.correlations["canonical"].n
    assert obs.coverage.n_covered == obs.correlations["canonical"].n
    # margins are paired on the queries with every target: those with a Canonical target
    assert obs.best_target is not None
    assert {m.n for m in obs.best_margin.values()} == {obs.correlations["canonical"].n}
    assert len(obs.best_margin) == 2
    assert obs.coverage.gap is not None
    assert obs.coverage.score_gap is not None
