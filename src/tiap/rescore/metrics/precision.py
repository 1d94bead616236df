"""P@k: precision at cut-off k.

.. math:: \\mathrm{P@k}(q) = \\frac{|\\{i \\le k : rel_i = 1\\}|}{k}

The divisor is always ``k``, also when the ranking is shorter (trec_eval
``P.k``; Manning, Raghavan & Schütze, *Introduction to Information
Retrieval*, 2008, §8.4).
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.metrics.measure import MeasureFamily, RankedRelevance, register_measure


def precision(relevance: RankedRelevance, k: int) -> np.ndarray:
    """P@k per query."""
    return relevance.hits_at(k) / k


PRECISION = register_measure(
    MeasureFamily("p", "Precision", precision, pytrec_eval="P_{k}", aliases=("precision",))
)
