"""Retrieval measures at cut-offs (trec_eval conventions, binary relevance).

One module per family: :mod:`.ndcg`, :mod:`.recall`, :mod:`.reciprocal_rank`
(``mrr``), :mod:`.average_precision` (``map``), :mod:`.precision` (``p``) and
:mod:`.hit`. Use :func:`parse_measure` (``"ndcg@10"``) or
:func:`parse_measures` (``"ndcg,recall@60"`` with cut-offs) and
:meth:`Measure.compute` on a :class:`RankedRelevance`.
"""

from tiap.rescore.metrics import (  # noqa: F401  (importing registers the families)
    average_precision,
    hit,
    ndcg,
    precision,
    recall,
    reciprocal_rank,
)
from tiap.rescore.metrics.measure import (
    DEFAULT_FAMILIES,
    DEFAULT_KS,
    MEASURES,
    Measure,
    MeasureFamily,
    RankedRelevance,
    get_family,
    parse_k,
    parse_ks,
    parse_measure,
    parse_measures,
    register_measure,
)

__all__ = [
    "DEFAULT_FAMILIES",
    "DEFAULT_KS",
    "MEASURES",
    "Measure",
    "MeasureFamily",
    "RankedRelevance",
    "get_family",
    "parse_k",
    "parse_ks",
    "parse_measure",
    "parse_measures",
    "register_measure",
]
