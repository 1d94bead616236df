"""nDCG@k: normalised discounted cumulative gain with binary gains.

.. math::

    \\mathrm{DCG@k}(q) = \\sum_{i=1}^{k} \\frac{rel_i}{\\log_2(i + 1)}, \\qquad
    \\mathrm{nDCG@k}(q) = \\frac{\\mathrm{DCG@k}(q)}{\\sum_{i=1}^{\\min(R, k)} 1 / \\log_2(i + 1)}

where ``rel_i`` is 1 when the memory at rank ``i`` is in the target and ``R``
is the target size: the ideal ranking is cut at ``k`` too (trec_eval
``ndcg_cut.k``). Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
techniques", ACM TOIS 20(4), 2002.
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.metrics.measure import MeasureFamily, RankedRelevance, register_measure


def ndcg(relevance: RankedRelevance, k: int) -> np.ndarray:
    """nDCG@k per query (``nan`` for an empty target)."""
    relevance.check_depth(k)
    ideal_n = np.minimum(relevance.n_rel, k)
    ideal = np.where(ideal_n > 0, relevance.cum_discount[np.maximum(ideal_n, 1) - 1], np.nan)
    return relevance.dcg_at(k) / ideal


NDCG = register_measure(
    MeasureFamily("ndcg", "nDCG", ndcg, pytrec_eval="ndcg_cut_{k}", aliases=("ndcg_cut",))
)
