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

tiap looks its int64 keys (id hashes, (query, id hash) pairs) up in a table
of its own (:class:`tiap.rescore.ids.HashTable`, open addressing in numpy
arrays). To keep what that table buys measured, every figure above is also
given ``..._with_get_indexer`` and ``..._with_searchsorted``: the same steps
with those lookups done by ``pandas.Index.get_indexer`` or by ``np.searchsorted``
over the ``np.unique`` keys instead (:data:`VARIANTS`; same values, checked).
``pandas_import_seconds`` is what the pandas variant would add to every
``tiap rescore`` command, which does not import pandas otherwise.

(c) ``peak_rss_mb``: the peak resident set size (``ru_maxrss``, Linux) of a fresh
    process running ``tiap rescore BUNDLE --resamples R`` at the most resamples the
    option allows (``tiap.limits.MAX_RESCORE_RESAMPLES``, 100,000;
    ``--peak-resamples`` to change, 0 skips it), with ``peak_rss_resamples`` and
    ``peak_rss_seconds``. Goal: under 500 MB.

Each time is the best of ``--repeat`` rounds (the timed steps of a ratio, and
their variants, take turns within a round). The last line is one JSON object.
Usage: ``python benchmarks/rescore.py [--queries 2000] [--repeat 7] [--keep DIR]
[--peak-resamples R]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import numpy as np

from peak_rss import run_measured
from tiap.limits import MAX_RESCORE_RESAMPLES
from tiap.rescore import ids, lineage
from tiap.rescore.api import rescore_bundle, write_outputs
from tiap.rescore.metrics import Measure, parse_measures
from tiap.rescore.scores import score_rankings, score_runs
from tiap.rescore.target_index import TargetIndex
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


class GetIndexerTable:
    """:class:`tiap.rescore.ids.HashTable`'s interface on ``pandas.Index.get_indexer``."""

    def __init__(self, index: Any) -> None:
        self._index = index

    @classmethod
    def of_distinct(cls, keys: np.ndarray) -> GetIndexerTable | None:
        import pandas as pd

        index = pd.Index(np.asarray(keys, dtype=np.int64))
        return cls(index) if index.is_unique else None

    def _find(self, values: np.ndarray) -> np.ndarray:
        flat = np.asarray(values, dtype=np.int64).reshape(-1)
        return np.asarray(self._index.get_indexer(flat), dtype=np.int64)

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        found = self._find(values)
        index = np.flatnonzero(found >= 0)
        return index, found[index]

    def absent(self, values: np.ndarray) -> np.ndarray:
        return np.flatnonzero(self._find(values) < 0)


class SearchSortedTable:
    """:class:`tiap.rescore.ids.HashTable`'s interface on ``np.searchsorted`` over the
    ``np.unique`` keys."""

    def __init__(self, keys: np.ndarray, where: np.ndarray) -> None:
        self._keys = keys
        self._where = where

    @classmethod
    def of_distinct(cls, keys: np.ndarray) -> SearchSortedTable | None:
        keys = np.asarray(keys, dtype=np.int64)
        distinct, where = np.unique(keys, return_index=True)
        return cls(distinct, where) if distinct.size == keys.size else None

    def _find(self, values: np.ndarray) -> np.ndarray:
        flat = np.asarray(values, dtype=np.int64).reshape(-1)
        if not self._keys.size:
            return np.full(flat.size, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._keys, flat), self._keys.size - 1)
        return np.where(self._keys[at] == flat, self._where[at], -1)

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        found = self._find(values)
        index = np.flatnonzero(found >= 0)
        return index, found[index]

    def absent(self, values: np.ndarray) -> np.ndarray:
        return np.flatnonzero(self._find(values) < 0)


#: Suffix of a figure's key -> the table its lookups go through (``""``: tiap's own).
VARIANTS: dict[str, type | None] = {
    "": None,
    "_with_get_indexer": GetIndexerTable,
    "_with_searchsorted": SearchSortedTable,
}

T = TypeVar("T")


@contextmanager
def lookups_through(table: type | None) -> Iterator[None]:
    """tiap's key lookups go through ``table`` while the block runs (in every tiap module
    that uses :class:`tiap.rescore.ids.HashTable`); ``None`` changes nothing."""
    if table is None:
        yield
        return
    users = [
        module
        for name, module in sorted(sys.modules.items())
        if name.startswith("tiap.") and getattr(module, "HashTable", None) is ids.HashTable
    ]
    if lineage not in users:
        raise RuntimeError("tiap.rescore.lineage no longer uses HashTable: update the benchmark")
    with ExitStack() as stack:
        for module in users:
            stack.enter_context(mock.patch.object(module, "HashTable", table))
        yield


def variant(fn: Callable[[], T], table: type | None) -> Callable[[], T]:
    """``fn`` run with its lookups through ``table``."""

    def run() -> T:
        with lookups_through(table):
            return fn()

    return run


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
    index = TargetIndex(bundle)
    for store in bundle.stores:
        sets = index.store(store)
        qrels[store] = {
            t: {q: set(members) for q, members in sets.as_sets(t).items() if members}
            for t in index.targets
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
    """(a): tiap and pytrec_eval from the same qrels and runs; tiap from the bundle; each
    tiap step with every lookup variant."""
    loaded = read_bundle(root)
    sizes = {s: len(m) for s, m in loaded.stores.items()}
    print(f"queries {len(loaded.queries)}, runs {len(loaded.runs)}, store sizes {sizes}")
    measures60 = parse_measures(None, (DEPTH,))
    qrels, runs = natural_inputs(loaded)
    trec_qrels, trec_runs = pytrec_eval_form(qrels, runs)

    def tiap() -> dict:
        return tiap_scores(qrels, runs, measures60)

    def tiap_bundle() -> object:
        return score_runs(loaded, measures60)

    steps: dict[str, Callable[[], object]] = {
        "trec": lambda: pytrec_eval_scores(trec_qrels, trec_runs)
    }
    for suffix, table in VARIANTS.items():
        steps[f"tiap{suffix}"] = variant(tiap, table)
        steps[f"tiap_bundle{suffix}"] = variant(tiap_bundle, table)
    times = dict(zip(steps, best_times(list(steps.values()), repeat), strict=True))
    reference = pytrec_eval_scores(trec_qrels, trec_runs)
    worst = max(max_difference(variant(tiap, table)(), reference) for table in VARIANTS.values())
    for suffix in VARIANTS:
        print(
            f"(a{suffix or ' tiap'}) measures {times[f'tiap{suffix}']:.3f}s, from the loaded "
            f"bundle (lineage join included) {times[f'tiap_bundle{suffix}']:.3f}s"
        )
    print(f"(a) pytrec_eval {times['trec']:.3f}s; largest difference {worst:.1e}")
    return {**times, "worst": worst}


def time_rescore(root: Path, out: Path, repeat: int) -> dict[str, float]:
    """(b): the full rescore and the read alone, as the command runs them (nothing else
    held in memory); the rescore with every lookup variant."""

    def full() -> None:
        write_outputs(rescore_bundle(read_bundle(root)), out)

    steps: dict[str, Callable[[], object]] = {"load": lambda: read_bundle(root)}
    for suffix, table in VARIANTS.items():
        steps[f"full{suffix}"] = variant(full, table)
    times = dict(zip(steps, best_times(list(steps.values()), repeat), strict=True))
    for suffix in VARIANTS:
        print(f"(b{suffix or ' tiap'}) full rescore {times[f'full{suffix}']:.3f}s")
    print(f"(b) load only {times['load']:.3f}s")
    return times


def pandas_import_seconds(repeat: int) -> float:
    """What importing pandas adds to a fresh interpreter that has numpy (best of rounds)."""

    def fresh(code: str) -> Callable[[], object]:
        return lambda: subprocess.run([sys.executable, "-c", code], check=True)

    t_numpy, t_pandas = best_times([fresh("import numpy"), fresh("import numpy, pandas")], repeat)
    return t_pandas - t_numpy


def peak_memory(root: Path, out: Path, resamples: int) -> dict[str, float]:
    """(c): peak RSS (MB) and seconds of ``tiap rescore`` in a fresh process."""
    args = ["rescore", str(root), "--out", str(out), "--resamples", str(resamples)]
    result = run_measured(args)
    print(
        f"(c) tiap rescore, {resamples} resamples, fresh process: peak RSS "
        f"{result['peak_rss_mb']:.1f} MB, {result['seconds']:.1f}s"
    )
    return {"peak_rss_mb": result["peak_rss_mb"], "seconds": result["seconds"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None, help="write the bundle here")
    parser.add_argument("--peak-resamples", type=int, default=MAX_RESCORE_RESAMPLES)
    args = parser.parse_args()
    peak = None

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "bundle"
        write_bundle(build_bundle(args.queries), root)
        print(f"built bundle in {time.perf_counter() - t0:.1f}s at {root}")
        a = time_metrics(root, args.repeat)
        gc.collect()
        b = time_rescore(root, Path(tmp) / "out", args.repeat)
        t_pandas = pandas_import_seconds(args.repeat)
        if args.peak_resamples:
            peak = peak_memory(root, Path(tmp) / "peak", args.peak_resamples)
    figures: dict[str, object] = {}
    for suffix in VARIANTS:
        figures[f"metrics_time_ratio_vs_pytrec_eval{suffix}"] = round(
            a[f"tiap{suffix}"] / a["trec"], 4
        )
    for suffix in VARIANTS:
        figures[f"full_rescore_ratio_vs_load{suffix}"] = round(b[f"full{suffix}"] / b["load"], 4)
    for suffix in VARIANTS:
        figures[f"metrics_from_bundle_ratio_vs_pytrec_eval{suffix}"] = round(
            a[f"tiap_bundle{suffix}"] / a["trec"], 4
        )
    figures["max_abs_difference_vs_pytrec_eval"] = a["worst"]
    figures["pandas_import_seconds"] = round(t_pandas, 4)
    figures["peak_rss_mb"] = round(peak["peak_rss_mb"], 1) if peak else None
    figures["peak_rss_resamples"] = args.peak_resamples
    figures["peak_rss_seconds"] = round(peak["seconds"], 2) if peak else None
    seconds = {"pytrec_eval": a["trec"], "load": b["load"]}
    for suffix in VARIANTS:
        seconds[f"tiap_measures{suffix}"] = a[f"tiap{suffix}"]
        seconds[f"tiap_measures_from_bundle{suffix}"] = a[f"tiap_bundle{suffix}"]
        seconds[f"full_rescore{suffix}"] = b[f"full{suffix}"]
    figures["seconds"] = {k: round(v, 4) for k, v in seconds.items()}
    print(json.dumps(figures))


if __name__ == "__main__":
    with tuned():  # the process tuning the tiap command runs with
        main()
