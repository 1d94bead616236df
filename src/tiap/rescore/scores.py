"""Per-query scores of every run under every target, as arrays.

:func:`score_runs` scores a bundle through its :class:`~tiap.rescore.target_index.TargetIndex`:
per store one lineage join, per run one :class:`~tiap.rescore.target_index.RunIndex`
(the hashes of its ranked ids and one relevance matrix per target), then one
column per measure (:func:`score_ranked`). :func:`score_rankings` does the
same from target sets and rankings given directly (``query_id -> ids``),
through the same :func:`score_ranked`. No Python loop runs over queries x ranks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from tiap.errors import TiapError
from tiap.limits import check_k
from tiap.rescore.lineage import qrels_targets
from tiap.rescore.metrics import Measure
from tiap.rescore.ranking import ranked_ids
from tiap.rescore.target_index import RunIndex, TargetIndex
from tiap.rescore.targets import DEFAULT_TARGETS
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


def _check_measures(measures: Sequence[Measure]) -> int:
    """The ranking depth the measures need."""
    if not measures:
        raise TiapError("no measure selected")
    for m in measures:
        check_k(f"the cut-off of {m.name}", m.k)
    return max(m.k for m in measures)


def score_ranked(index: RunIndex, measures: Sequence[Measure]) -> RunScores:
    """One run's per-query values under every target of ``index``.

    ``index`` must hold at least as many ranks as the deepest measure needs.
    """
    values = {
        t: np.column_stack([m.compute(relevance) for m in measures])
        for t, relevance in index.relevance.items()
    }
    return RunScores(
        run=index.run,
        store=index.sets.store,
        values=values,
        sizes=dict(index.sets.sizes),
        present=index.ranked.present,
        repeats=index.ranked.repeats,
    )


def score_rankings(
    qrels: Mapping[str, Mapping[str, Collection[str]]],
    runs: Mapping[str, Mapping[str, Sequence[str]]],
    measures: Sequence[Measure],
    *,
    query_ids: Sequence[str] | None = None,
) -> ScoreTable:
    """Per-query measures of rankings against target sets given directly.

    ``qrels`` is ``target -> query_id -> relevant memory ids`` (binary
    relevance, the form of a qrels file; a pytrec_eval qrels dict works too,
    every listed id counting as relevant), ``runs`` is ``run -> query_id ->
    ranked memory ids`` (best first; a repeated id counts at its first rank).
    ``query_ids`` fixes the rows (default: every query named in ``qrels``, in
    first-seen order); a query without relevant ids under a target is ``nan``
    there, a query missing from a run has an empty ranking, and rankings of
    other queries are ignored. The same code scores bundles
    (:func:`score_runs`), so for a bundle's target sets and runs the values
    are identical. From a notebook::

        table = score_rankings({"source": {"q1": {"m1", "m7"}}}, {"bm25": {"q1": ["m7", "m2"]}},
                               parse_measures("ndcg,recall", (10,)))
        table.runs["bm25"].values["source"]   # (queries, measures)
    """
    depth = _check_measures(measures)
    if not qrels:
        raise TiapError("no target selected")
    if query_ids is None:
        query_ids = list(dict.fromkeys(chain.from_iterable(qrels.values())))
    st = qrels_targets(qrels, query_ids)
    for run, rankings in runs.items():
        if any(map(isinstance, rankings.values(), repeat(str))):
            q = next(q for q, r in rankings.items() if isinstance(r, str))
            raise TiapError(f"ranking of query '{q}' in run '{run}' is a string, not a list of ids")
    scored = {
        run: score_ranked(
            RunIndex.of(st, ranked_ids(rankings, st.query_ids, depth), run=run), measures
        )
        for run, rankings in runs.items()
    }
    return ScoreTable(
        query_ids=st.query_ids,
        categories=(None,) * len(st.query_ids),
        measures=tuple(measures),
        targets=tuple(qrels),
        runs=scored,
    )


def score_runs(
    bundle: Bundle,
    measures: Sequence[Measure],
    *,
    runs: Sequence[str] | None = None,
    targets: Sequence[str] = DEFAULT_TARGETS,
) -> ScoreTable:
    """Compute every measure for every (run, target, query) of a bundle."""
    depth = _check_measures(measures)
    index = TargetIndex(bundle, targets)
    run_names = select_runs(bundle, runs)
    return ScoreTable(
        query_ids=index.query_ids,
        categories=tuple(q.category for q in bundle.queries),
        measures=tuple(measures),
        targets=index.targets,
        runs={run: score_ranked(index.run(run, depth), measures) for run in run_names},
    )
