"""Per-query scores of every run under every target, as arrays.

:func:`score_runs` is the vectorised hot path: per store one lineage join
(:func:`~tiap.rescore.lineage.store_targets`), per run one rank matrix, per
(run, target) one relevance matrix and one column per measure. No Python loop
runs over queries x ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tiap.errors import TiapError
from tiap.rescore.lineage import StoreTargets, store_targets
from tiap.rescore.metrics import Measure, RankedRelevance
from tiap.rescore.ranking import rank_matrix
from tiap.rescore.targets import DEFAULT_TARGETS, get_target
from tiap.traces.bundle import Bundle


@dataclass(frozen=True)
class RunScores:
    """One run: ``values[target]`` is ``(queries, measures)``, ``nan`` for empty targets."""

    run: str
    store: str
    values: dict[str, np.ndarray]
    sizes: dict[str, np.ndarray]
    present: np.ndarray
    repeats: np.ndarray


@dataclass(frozen=True)
class ScoreTable:
    """Scores of several runs over the bundle's queries (in ``queries.jsonl`` order)."""

    query_ids: tuple[str, ...]
    categories: tuple[str | None, ...]
    measures: tuple[Measure, ...]
    targets: tuple[str, ...]
    runs: dict[str, RunScores]

    def column(self, measure: Measure | str) -> int:
        name = str(measure)
        for i, m in enumerate(self.measures):
            if str(m) == name:
                return i
        raise TiapError(f"measure '{name}' was not computed")


def select_runs(bundle: Bundle, runs: Sequence[str] | None) -> tuple[str, ...]:
    """The runs to analyse, sorted by name; unknown names raise :class:`TiapError`."""
    known = tuple(bundle.config.runs)
    if not known:
        raise TiapError("the bundle has no runs to rescore (declare them in bundle.toml)")
    if runs is None:
        return tuple(sorted(known))
    chosen = [r.strip() for r in runs if r.strip()]
    unknown = [r for r in chosen if r not in bundle.config.runs]
    if unknown:
        listed = ", ".join(sorted(known)) or "none"
        raise TiapError(f"unknown run '{unknown[0]}' (runs in this bundle: {listed})")
    if not chosen:
        raise TiapError("no run selected")
    return tuple(sorted(dict.fromkeys(chosen)))


def score_runs(
    bundle: Bundle,
    measures: Sequence[Measure],
    *,
    runs: Sequence[str] | None = None,
    targets: Sequence[str] = DEFAULT_TARGETS,
) -> ScoreTable:
    """Compute every measure for every (run, target, query)."""
    if not measures:
        raise TiapError("no measure selected")
    target_names = tuple(get_target(t).name for t in dict.fromkeys(targets))
    if len(target_names) < 1:
        raise TiapError("no target selected")
    run_names = select_runs(bundle, runs)
    depth = max(m.k for m in measures)
    query_ids = tuple(q.query_id for q in bundle.queries)
    per_store: dict[str, StoreTargets] = {}
    scored: dict[str, RunScores] = {}
    for run in run_names:
        store = bundle.run_store(run)
        if store not in bundle.stores:
            raise TiapError(f"run '{run}' names store '{store}', which the bundle does not have")
        if store not in per_store:
            per_store[store] = store_targets(bundle, store, target_names)
        st = per_store[store]
        ranks = rank_matrix(bundle.rankings(run), query_ids, st.memories, depth)
        values: dict[str, np.ndarray] = {}
        for t, rel in st.relevance(ranks.index).items():
            relevance = RankedRelevance(rel, st.sizes[t])
            values[t] = np.column_stack([m.compute(relevance) for m in measures])
        scored[run] = RunScores(
            run=run,
            store=store,
            values=values,
            sizes={t: st.sizes[t] for t in target_names},
            present=ranks.present,
            repeats=ranks.repeats,
        )
    return ScoreTable(
        query_ids=query_ids,
        categories=tuple(q.category for q in bundle.queries),
        measures=tuple(measures),
        targets=target_names,
        runs=scored,
    )
