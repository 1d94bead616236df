"""Recall@k: the share of the target found in the top k.

.. math:: \\mathrm{Recall@k}(q) = \\frac{|\\{i \\le k : rel_i = 1\\}|}{R}

with ``R`` the target size (trec_eval ``recall.k``; Manning, Raghavan &
Schütze, *Introduction to Information Retrieval*, 2008, §8.3).
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.metrics.measure import MeasureFamily, RankedRelevance, register_measure


def recall(relevance: RankedRelevance, k: int) -> np.ndarray:
    """Recall@k per query (``nan`` for an empty target)."""
    return relevance.per_relevant(relevance.hits_at(k))


RECALL = register_measure(
    MeasureFamily("recall", "Recall", recall, pytrec_eval="recall_{k}", aliases=("r",))
)
