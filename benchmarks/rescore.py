"""Speed of `tiap rescore` on a LoCoMo-scale synthetic bundle.

Builds a bundle with about 2,000 queries over 10 conversations (5,900 source
turns), 4 stores of about 10,000 memories (raw turns plus extracted facts at
four parser densities and session summaries) and 8 runs (two retrievers per
store) of 60 memories each, then prints:

(a) ``metrics_time_ratio_vs_pytrec_eval``: time of tiap's per-query measures
    (8 runs x 3 targets x nDCG, Recall, MRR, MAP, P, Hit at k = 60) divided by
    pytrec_eval's time for the same measures (``ndcg_cut.60 recall.60
    recip_rank map_cut.60 P.60 success.60``: building one evaluator per
    (store, target) and evaluating every run) on the same qrels and runs, each
    tool starting from its own input form: pytrec_eval from qrels and run
    dicts, tiap from its linked-pair keys and rank matrices (relevance
    matrices and measures are timed). Goal at most 0.2.
    ``metrics_from_bundle_ratio_vs_pytrec_eval`` also times tiap's conversion
    from the loaded bundle (lineage join per store, rank matrix per run),
    i.e. ``score_runs`` end to end.
(b) ``full_rescore_ratio_vs_load``: time of the full rescore (read the bundle,
    k = 10 and 60, the 3,000-resample bootstraps, write per_query.csv,
    report.json and report.md) divided by the time to only read the bundle;
    goal at most 3.

Each time is the best of ``--repeat`` runs. The last line is one JSON object.
Usage: ``python benchmarks/rescore.py [--queries 2000] [--repeat 3] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tiap.rescore.api import rescore_bundle, write_outputs
from tiap.rescore.lineage import store_targets
from tiap.rescore.metrics import RankedRelevance, parse_measures
from tiap.rescore.ranking import rank_matrix
from tiap.rescore.scores import score_runs
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


def best_time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def pytrec_eval_inputs(bundle: Bundle) -> tuple[dict, dict]:
    """qrels per (store, target) and runs as pytrec_eval dicts (scores encode the run order)."""
    qrels: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    for store in bundle.stores:
        st = store_targets(bundle, store)
        for target in st.keys:
            qrels[(store, target)] = {
                q: dict.fromkeys(members, 1) for q, members in st.as_sets(target).items() if members
            }
    runs = {
        name: {
            e.query_id: {mid: float(DEPTH - i) for i, mid in enumerate(dict.fromkeys(e.ranking))}
            for e in entries
        }
        for name, entries in bundle.runs.items()
    }
    return qrels, runs


def time_pytrec_eval(bundle: Bundle, qrels: dict, runs: dict, repeat: int) -> float:
    import pytrec_eval

    names = {"ndcg_cut.60", "recall.60", "recip_rank", "map_cut.60", "P.60", "success.60"}

    def evaluate() -> None:
        evaluators = {key: pytrec_eval.RelevanceEvaluator(q, names) for key, q in qrels.items()}
        for run, run_dict in runs.items():
            store = bundle.run_store(run)
            for (s, _t), ev in evaluators.items():
                if s == store:
                    ev.evaluate(run_dict)

    return best_time(evaluate, repeat)


def time_tiap_prepared(bundle: Bundle, repeat: int) -> float:
    """Relevance matrices and measures from prepared target keys and rank matrices."""
    measures = parse_measures(None, (DEPTH,))
    targets = {s: store_targets(bundle, s) for s in bundle.stores}
    query_ids = [q.query_id for q in bundle.queries]
    prepared = []
    for run in bundle.runs:
        st = targets[bundle.run_store(run)]
        ranks = rank_matrix(bundle.rankings(run), query_ids, st.memories, DEPTH)
        prepared.append((st, ranks.index))

    def evaluate() -> None:
        for st, index in prepared:
            for t, rel in st.relevance(index).items():
                relevance = RankedRelevance(rel, st.sizes[t])
                np.column_stack([m.compute(relevance) for m in measures])

    return best_time(evaluate, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="write the bundle here")
    args = parser.parse_args()

    t0 = time.perf_counter()
    bundle = build_bundle(args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "bundle"
        write_bundle(bundle, root)
        print(f"built bundle in {time.perf_counter() - t0:.1f}s at {root}")
        loaded = read_bundle(root)
        sizes = {s: len(m) for s, m in loaded.stores.items()}
        print(f"queries {len(loaded.queries)}, runs {len(loaded.runs)}, store sizes {sizes}")

        measures60 = parse_measures(None, (DEPTH,))
        t_tiap = time_tiap_prepared(loaded, args.repeat)
        t_tiap_bundle = best_time(lambda: score_runs(loaded, measures60), args.repeat)
        qrels, runs = pytrec_eval_inputs(loaded)
        t_trec = best_time(lambda: time_pytrec_eval(loaded, qrels, runs, 1), args.repeat)
        print(
            f"(a) tiap measures {t_tiap:.3f}s (from the loaded bundle {t_tiap_bundle:.3f}s), "
            f"pytrec_eval {t_trec:.3f}s"
        )

        out = Path(tmp) / "out"
        t_load = best_time(lambda: read_bundle(root), args.repeat)

        def full() -> None:
            write_outputs(rescore_bundle(read_bundle(root)), out)

        t_full = best_time(full, args.repeat)
        print(f"(b) full rescore {t_full:.3f}s, load only {t_load:.3f}s")
    print(
        json.dumps(
            {
                "metrics_time_ratio_vs_pytrec_eval": round(t_tiap / t_trec, 4),
                "full_rescore_ratio_vs_load": round(t_full / t_load, 4),
                "metrics_from_bundle_ratio_vs_pytrec_eval": round(t_tiap_bundle / t_trec, 4),
                "seconds": {
                    "tiap_measures": round(t_tiap, 4),
                    "tiap_measures_from_bundle": round(t_tiap_bundle, 4),
                    "pytrec_eval": round(t_trec, 4),
                    "full_rescore": round(t_full, 4),
                    "load": round(t_load, 4),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
