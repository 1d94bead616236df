"""One order and one colour per target pair, in every figure of every report.

``canonical-raw`` (the paper's headline pair) first, then ``source-raw``, then
``canonical-source``; pairs of other targets follow by name. A pair's colour is fixed
by its place in that order, whatever other pairs a report holds, so ``report.html``
and the audit's ``index.html`` draw a pair alike. The colours are none of those that
mean down and up in the shift histograms.
"""

from __future__ import annotations

from collections.abc import Iterable

from tiap.report.palette import PALETTE

#: the target pairs of the three standard targets, in the order every figure shows them
PAIR_ORDER = ("canonical-raw", "source-raw", "canonical-source")
#: their colours, in that order, then those of other pairs (by name)
PAIR_COLORS = (PALETTE[2], PALETTE[7], PALETTE[6], PALETTE[3], PALETTE[5], PALETTE[4])


def ordered_pairs(pairs: Iterable[str]) -> list[str]:
    """``pairs`` in the fixed order: the standard pairs first, then the others by name."""
    given = list(dict.fromkeys(pairs))
    known = [p for p in PAIR_ORDER if p in given]
    return known + sorted(p for p in given if p not in PAIR_ORDER)


def pair_color(pair: str, pairs: Iterable[str] = ()) -> str:
    """The colour of ``pair``: fixed for the standard pairs; another pair's follows its
    place by name among the other pairs of ``pairs``."""
    if pair in PAIR_ORDER:
        return PAIR_COLORS[PAIR_ORDER.index(pair)]
    others = sorted({p for p in (*pairs, pair) if p not in PAIR_ORDER})
    return PAIR_COLORS[(len(PAIR_ORDER) + others.index(pair)) % len(PAIR_COLORS)]
