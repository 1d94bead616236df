"""MRR@k: reciprocal rank of the first target member within the top k.

.. math:: \\mathrm{RR@k}(q) = 1 / \\min\\{i \\le k : rel_i = 1\\}, \\text{ or } 0 \\text{ if none}

averaged over queries it is the mean reciprocal rank (Voorhees, "The TREC-8
question answering track report", TREC 1999). It equals trec_eval
``recip_rank`` on the run cut to its first ``k`` memories.
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.metrics.measure import MeasureFamily, RankedRelevance, register_measure


def reciprocal_rank(relevance: RankedRelevance, k: int) -> np.ndarray:
    """RR@k per query."""
    relevance.check_depth(k)
    first = relevance.first_hit
    within = (first > 0) & (first <= k)
    return np.where(within, 1.0 / np.maximum(first, 1), 0.0)


MRR = register_measure(
    MeasureFamily(
        "mrr",
        "MRR",
        reciprocal_rank,
        pytrec_eval="recip_rank (run cut at k)",
        aliases=("rr", "recip_rank"),
    )
)
