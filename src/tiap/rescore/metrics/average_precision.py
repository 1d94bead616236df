"""MAP@k: average precision cut at k, divided by the target size.

.. math::

    \\mathrm{AP@k}(q) = \\frac{1}{R} \\sum_{i=1}^{k} rel_i \\cdot \\mathrm{P@i}(q)

with ``R`` the full target size, also when ``R > k`` (trec_eval
``map_cut.k``; Buckley & Voorhees, "Evaluating evaluation measure stability",
SIGIR 2000). Averaged over queries it is MAP@k.
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.metrics.measure import MeasureFamily, RankedRelevance, register_measure


def average_precision(relevance: RankedRelevance, k: int) -> np.ndarray:
    """AP@k per query (``nan`` for an empty target)."""
    relevance.check_depth(k)
    return relevance.per_relevant(relevance.precision_sum_at(k))


MAP = register_measure(
    MeasureFamily(
        "map", "MAP", average_precision, pytrec_eval="map_cut_{k}", aliases=("ap", "map_cut")
    )
)
