"""Hit@k: 1 when any target member is in the top k, else 0.

.. math:: \\mathrm{Hit@k}(q) = \\mathbb{1}[\\exists i \\le k : rel_i = 1]

Also called success@k (trec_eval ``success.k``) or top-k accuracy.
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.metrics.measure import MeasureFamily, RankedRelevance, register_measure


def hit(relevance: RankedRelevance, k: int) -> np.ndarray:
    """Hit@k per query."""
    return (relevance.hits_at(k) > 0).astype(np.float64)


HIT = register_measure(
    MeasureFamily("hit", "Hit", hit, pytrec_eval="success_{k}", aliases=("success",))
)
