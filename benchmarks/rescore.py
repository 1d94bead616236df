"""Speed of `tiap rescore` on a LoCoMo-scale synthetic bundle.

Builds a bundle with about 2,000 queries over 10 conversations (5,900 source
turns), 4 stores of about 10,000 memories (raw turns plus extracted facts at
four parser densities and session summaries) and 8 runs (two retrievers per
store) of 60 memories each, then prints:

(a) ``metrics_time_ratio_vs_pytrec_eval``: time of tiap's per-query measures
    (8 runs x 3 targets x nDCG, Recall, MRR, MAP, P, Hit at k = 60) divided by
    pytrec_eval's time for the same measures (``ndcg_cut.60 recall.60
    recip_rank map_cut.60 P.60 success.60``) on the same qrels and runs. Both
    start from the same information in its natural form: per store and
    target the qrels (query_id -> relevant memory ids) and per run the
    rankings (query_id -> ranked memory ids); pytrec_eval gets them as its
    qrels and run dicts, tiap as sets and lists. Each time includes turning
    them into the tool's internal form and computing every per-query value:
    pytrec_eval builds one evaluator per (store, target) and evaluates every
    run of the store; tiap calls its public ``score_rankings`` once per store
    (the code that also scores bundles). Goal at most 0.2.
    ``max_abs_difference_vs_pytrec_eval`` is the largest difference between
    the two tools' values. ``metrics_from_bundle_ratio_vs_pytrec_eval`` times
    ``score_runs`` from the loaded bundle instead (lineage join per store
    included).
(b) ``full_rescore_ratio_vs_load``: time of the full rescore (read the bundle,
    k = 10 and 60, the 3,000-resample bootstraps, write per_query.csv,
    report.json and report.md) divided by the time to only read the bundle;
    goal at most 3.

Each time is the best of ``--repeat`` rounds (the timed steps of a ratio take
turns within a round). The last line is one JSON object.
Usage: ``python benchmarks/rescore.py [--queries 2000] [--repeat 7] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tiap.rescore.api import rescore_bundle, write_outputs
from tiap.rescore.metrics import Measure, parse_measures
from tiap.rescore.scores import score_rankings, score_runs
from tiap.rescore.targets import target_sets
from tiap.runtime import tuned
from tiap.traces.bundle import Bundle, read_bundle, write_bundle
from tiap.traces.models import BundleConfig, Memory, Query, RunConfig, RunEntry, Source

CONVERSATIONS = 10
SESSIONS = 27
TURNS_PER_SESSION = 22
DENSITIES = (1, 2, 3, 4)
RETRIEVERS = ("bm25", "dense")
DEPTH = 60
CATEGORIES = ("1", "2", "3", "4", "5")
CATEGORY_P = (0.14, 0.16, 0.05, 0.42, 0.23)


def build_bundle(n_queries: int, seed: int = 7) -> Bundle:
    rng = np.random.default_rng(seed)
    sources: list[Source] = []
    turns: dict[int, list[str]] = {}
    sessions: dict[tuple[int, int], list[str]] = {}
    for c in range(CONVERSATIONS):
        for s in range(1, SESSIONS + 1):
            for t in range(1, TURNS_PER_SESSION + 1):
                sid = f"conv-{c}:D{s}:{t}"
                sources.append(
                    Source(source_id=sid, text=f"turn {sid}", conversation_id=f"conv-{c}")
                )
                turns.setdefault(c, []).append(sid)
                sessions.setdefault((c, s), []).append(sid)

    queries = []
    for i in range(n_queries):
        c = int(rng.integers(CONVERSATIONS))
        n_ev = int(rng.choice([1, 1, 1, 2, 3]))
        start = int(rng.integers(len(turns[c]) - 3))
        evidence = turns[c][start : start + n_ev]
        queries.append(
            Query(
                query_id=f"q{i:05d}",
                question=f"question {i}",
                answer="answer",
                evidence=evidence,
                category=str(rng.choice(CATEGORIES, p=CATEGORY_P)),
                conversation_id=f"conv-{c}",
            )
        )

    stores: dict[str, list[Memory]] = {}
    for density in DENSITIES:
        mems: list[Memory] = []
        for c in range(CONVERSATIONS):
            for sid in turns[c]:
                mems.append(
                    Memory(
                        memory_id=f"raw:{sid}",
                        text=sid,
                        source_ids=[sid],
                        raw=True,
                        canonical=False,
                    )
                )
            facts = rng.binomial(density, 0.25, size=len(turns[c]))
            for j, (sid, n_f) in enumerate(zip(turns[c], facts, strict=True)):
                for f in range(int(n_f)):
                    links = [sid] if rng.random() > 0.1 or j == 0 else [turns[c][j - 1], sid]
                    mems.append(
                        Memory(
                            memory_id=f"fact{density}:{sid}:{f}",
                            text=f"fact about {sid}",
                            source_ids=links,
                            raw=False,
                            canonical=True,
                        )
                    )
            for s in range(1, SESSIONS + 1):
                mems.append(
                    Memory(
                        memory_id=f"sum{density}:conv-{c}:S{s}",
                        text="summary",
                        source_ids=sessions[(c, s)],
                        raw=False,
                        canonical=False,
                    )
                )
        stores[f"facts{density}"] = mems

    runs: dict[str, list[RunEntry]] = {}
    run_cfg: dict[str, RunConfig] = {}
    for density in DENSITIES:
        store = f"facts{density}"
        mems = stores[store]
        by_conv: dict[str, list[str]] = {}
        linked: dict[str, list[str]] = {}
        for m in mems:
            conv = m.source_ids[0].split(":")[0]
            by_conv.setdefault(conv, []).append(m.memory_id)
            for sid in m.source_ids:
                linked.setdefault(sid, []).append(m.memory_id)
        for r_i, retriever in enumerate(RETRIEVERS):
            name = f"{retriever}-f{density}"
            entries = []
            for q in queries:
                pool = by_conv[q.conversation_id]
                picks = [pool[k] for k in rng.choice(len(pool), size=DEPTH + 8, replace=False)]
                gold = [mid for sid in q.evidence for mid in linked[sid]]
                hit_p = 0.55 + 0.1 * r_i
                for mid in gold:
                    if rng.random() < hit_p:
                        pos = int(min(rng.geometric(0.12) - 1, DEPTH - 1))
                        picks.insert(pos, mid)
                ranking = list(dict.fromkeys(picks))[:DEPTH]
                entries.append(RunEntry(query_id=q.query_id, ranking=ranking))
            runs[name] = entries
            run_cfg[name] = RunConfig(
                store=store, retriever=retriever, config={"parser_max_facts": density}
            )
    config = BundleConfig(name="synthetic", dataset="locomo-synthetic", k=60, runs=run_cfg)
    return Bundle(
        config=config,
        queries=queries,
        sources={s.source_id: s for s in sources},
        stores=stores,
        runs=runs,
    )


def best_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Best time of each function over ``repeat`` rounds; the functions take turns within a
    round, so that a change in the machine's load affects them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


PYTREC_MEASURES = {
    "ndcg@60": "ndcg_cut_60",
    "recall@60": "recall_60",
    "mrr@60": "recip_rank",
    "map@60": "map_cut_60",
    "p@60": "P_60",
    "hit@60": "success_60",
}


def natural_inputs(bundle: Bundle) -> tuple[dict, dict]:
    """Per store: qrels ``target -> query_id -> set of relevant memory ids`` (queries with
    an empty target left out, as a qrels file has them) and runs ``run -> query_id ->
    ranked memory ids``: the information both tools start from."""
    qrels: dict[str, dict[str, dict[str, set[str]]]] = {}
    for store in bundle.stores:
        reference = target_sets(bundle, store)
        qrels[store] = {
            t: {q: set(members) for q, members in per_query.items() if members}
            for t, per_query in reference.items()
        }
    runs: dict[str, dict[str, dict[str, list[str]]]] = {}
    for run in bundle.runs:
        rankings = {q: list(r) for q, r in bundle.rankings(run).items()}
        runs.setdefault(bundle.run_store(run), {})[run] = rankings
    return qrels, runs


def pytrec_eval_form(qrels: dict, runs: dict) -> tuple[dict, dict]:
    """The same qrels and runs as pytrec_eval dicts (scores encode the run order)."""
    trec_qrels = {
        (store, t): {q: dict.fromkeys(ids, 1) for q, ids in per_query.items()}
        for store, per_target in qrels.items()
        for t, per_query in per_target.items()
    }
    trec_runs = {
        store: {
            run: {
                q: {m: float(DEPTH - i) for i, m in enumerate(dict.fromkeys(r))}
                for q, r in rankings.items()
            }
            for run, rankings in store_runs.items()
        }
        for store, store_runs in runs.items()
    }
    return trec_qrels, trec_runs


def pytrec_eval_scores(trec_qrels: dict, trec_runs: dict) -> dict:
    """``(store, target, run) -> query_id -> measure -> value``: evaluators + evaluation."""
    import pytrec_eval

    names = {"ndcg_cut.60", "recall.60", "recip_rank", "map_cut.60", "P.60", "success.60"}
    evaluators = {key: pytrec_eval.RelevanceEvaluator(q, names) for key, q in trec_qrels.items()}
    return {
        (store, target, run): ev.evaluate(run_dict)
        for (store, target), ev in evaluators.items()
        for run, run_dict in trec_runs[store].items()
    }


def tiap_scores(qrels: dict, runs: dict, measures: tuple[Measure, ...]) -> dict:
    """``store -> ScoreTable``: tiap's public entry point for target sets + rankings."""
    return {store: score_rankings(qrels[store], runs[store], measures) for store in runs}


def max_difference(tiap: dict, trec: dict) -> float:
    """Largest |tiap - pytrec_eval| over every (store, target, run, query, measure)."""
    worst = 0.0
    for (store, target, run), per_query in trec.items():
        table = tiap[store]
        values = table.runs[run].values[target]
        row = {q: i for i, q in enumerate(table.query_ids)}
        cols = {name: table.column(m) for m, name in PYTREC_MEASURES.items()}
        for q, res in per_query.items():
            for m, col in cols.items():
                worst = max(worst, abs(float(values[row[q], col]) - res[m]))
    return worst


def time_metrics(root: Path, repeat: int) -> dict[str, float]:
    """(a): tiap and pytrec_eval from the same qrels and runs; tiap from the bundle."""
    loaded = read_bundle(root)
    sizes = {s: len(m) for s, m in loaded.stores.items()}
    print(f"queries {len(loaded.queries)}, runs {len(loaded.runs)}, store sizes {sizes}")
    measures60 = parse_measures(None, (DEPTH,))
    qrels, runs = natural_inputs(loaded)
    trec_qrels, trec_runs = pytrec_eval_form(qrels, runs)
    t_trec, t_tiap, t_tiap_bundle = best_times(
        [
            lambda: pytrec_eval_scores(trec_qrels, trec_runs),
            lambda: tiap_scores(qrels, runs, measures60),
            lambda: score_runs(loaded, measures60),
        ],
        repeat,
    )
    worst = max_difference(
        tiap_scores(qrels, runs, measures60), pytrec_eval_scores(trec_qrels, trec_runs)
    )
    print(
        f"(a) tiap measures {t_tiap:.3f}s (from the loaded bundle, lineage join included: "
        f"{t_tiap_bundle:.3f}s), pytrec_eval {t_trec:.3f}s; largest difference {worst:.1e}"
    )
    return {"tiap": t_tiap, "tiap_bundle": t_tiap_bundle, "trec": t_trec, "worst": worst}


def time_rescore(root: Path, out: Path, repeat: int) -> dict[str, float]:
    """(b): the full rescore and the read alone, as the command runs them (nothing else
    held in memory)."""

    def full() -> None:
        write_outputs(rescore_bundle(read_bundle(root)), out)

    t_load, t_full = best_times([lambda: read_bundle(root), full], repeat)
    print(f"(b) full rescore {t_full:.3f}s, load only {t_load:.3f}s")
    return {"load": t_load, "full": t_full}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None, help="write the bundle here")
    args = parser.parse_args()

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "bundle"
        write_bundle(build_bundle(args.queries), root)
        print(f"built bundle in {time.perf_counter() - t0:.1f}s at {root}")
        a = time_metrics(root, args.repeat)
        gc.collect()
        b = time_rescore(root, Path(tmp) / "out", args.repeat)
    print(
        json.dumps(
            {
                "metrics_time_ratio_vs_pytrec_eval": round(a["tiap"] / a["trec"], 4),
                "full_rescore_ratio_vs_load": round(b["full"] / b["load"], 4),
                "metrics_from_bundle_ratio_vs_pytrec_eval": round(a["tiap_bundle"] / a["trec"], 4),
                "max_abs_difference_vs_pytrec_eval": a["worst"],
                "seconds": {
                    "tiap_measures": round(a["tiap"], 4),
                    "tiap_measures_from_bundle": round(a["tiap_bundle"], 4),
                    "pytrec_eval": round(a["trec"], 4),
                    "full_rescore": round(b["full"], 4),
                    "load": round(b["load"], 4),
                },
            }
        )
    )


if __name__ == "__main__":
    with tuned():  # the process tuning the tiap command runs with
        main()
