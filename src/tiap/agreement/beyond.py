"""The agreement figures beyond kappa in a report: Gwet's AC1 on every scale (over the
included raters, and of each compared rater against the reference), each label's base
rate beside every kappa, and on an ordinal rubric Gwet's AC2, Krippendorff's ordinal
alpha and Cohen's quadratic-weighted kappa (formulas: :mod:`tiap.agreement.beyond_formulas`).

Every figure is resampled with the report's other figures (one pass over the same
draws); the point estimates of the weighted kappa and the ordinal alpha come from the
reference libraries (:mod:`tiap.agreement.library`), like the report's other kappas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from tiap.agreement import beyond_formulas as bf
from tiap.agreement import library as lib
from tiap.agreement.beyond_models import OrdinalFigures, WeightedPair
from tiap.agreement.estimates import Estimate
from tiap.agreement.figure_model import Figure, figure_of
from tiap.agreement.formulas import Stat
from tiap.agreement.scale import Scale

#: the weighted kappa of an ordinal rubric (Cohen 1968; quadratic: the usual choice)
WEIGHTED_KAPPA: bf.KappaWeighting = "quadratic"


def shares(counts: np.ndarray, cats: Sequence[str]) -> dict[str, float | None]:
    """Each label's share of ``counts`` (``None`` for every label when there are none)."""
    total = float(counts.sum())
    return {c: (float(counts[i]) / total if total else None) for i, c in enumerate(cats)}


def scale_base_rates(s: Scale) -> dict[str, float | None]:
    """Each label's share of the included raters' valid labels on a scale."""
    valid = s.codes[s.codes >= 0]
    return shares(np.bincount(valid, minlength=s.k).astype(np.float64), s.cats)


def pair_base_rates(confusion: np.ndarray, cats: Sequence[str]) -> dict[str, float | None]:
    """Each label's share of both raters' labels on the cases they share."""
    return shares(confusion.sum(axis=0) + confusion.sum(axis=1), cats)


def reference_base_rates(confusion: np.ndarray, cats: Sequence[str]) -> dict[str, float | None]:
    """Each label's share of the reference's labels on the compared cases (the rows)."""
    return shares(confusion.sum(axis=1), cats)


def stats(
    scales: Sequence[Scale],
    compared: Sequence[tuple[str, Sequence[np.ndarray]]],
    *,
    ordinal: bool,
) -> dict[str, Stat]:
    """The resampled figures: ``gwet.<scale>``; ``ref.ac1.<scale>.<rater>`` per compared
    rater (``compared``: name and its codes on each scale); on an ordinal rubric
    ``ord.*`` on the labels."""
    out: dict[str, Stat] = {}
    for i, s in enumerate(scales):
        out[f"gwet.{s.name}"] = bf.gwet_stat(s.codes, s.k)
        if s.ref is None:
            continue
        for name, codes in compared:
            out[f"ref.ac1.{s.name}.{name}"] = bf.pair_gwet_stat(s.ref, codes[i], s.k)
    if ordinal:
        out.update(_ordinal_stats(scales[0], compared))
    return out


def _weighted(a: np.ndarray, b: np.ndarray, k: int) -> Stat:
    stat = bf.weighted_kappa_stat(a, b, k, WEIGHTED_KAPPA)
    return replace(stat, point=partial(lib.weighted_kappa, a, b, k, WEIGHTED_KAPPA))


def _ordinal_stats(
    s: Scale, compared: Sequence[tuple[str, Sequence[np.ndarray]]]
) -> dict[str, Stat]:
    out: dict[str, Stat] = {
        "ord.ac2.linear": bf.gwet_stat(s.codes, s.k, "linear"),
        "ord.ac2.quadratic": bf.gwet_stat(s.codes, s.k, "quadratic"),
        "ord.alpha": replace(
            bf.ordinal_alpha_stat(s.codes, s.k), point=partial(lib.ordinal_alpha, s.codes, s.k)
        ),
    }
    m = s.codes.shape[1]
    for i in range(m):
        for j in range(i + 1, m):
            out[f"ord.wk.{i}.{j}"] = _weighted(s.codes[:, i], s.codes[:, j], s.k)
    if s.ref is not None:
        for name, codes in compared:
            out[f"ord.wk.ref.{name}"] = _weighted(s.ref, codes[0], s.k)
    return out


def gwet_ac1(scales: Sequence[Scale], est: dict[str, Estimate]) -> dict[str, Figure]:
    """Gwet's AC1 over the included raters, per scale."""
    return {s.name: figure_of(est[f"gwet.{s.name}"]) for s in scales}


def reference_ac1(est: dict[str, Estimate], scale: str, rater: str) -> Figure | None:
    """A compared rater's AC1 against the reference on a scale."""
    e = est.get(f"ref.ac1.{scale}.{rater}")
    return figure_of(e) if e is not None else None


def ordinal_figures(
    s: Scale,
    est: dict[str, Estimate],
    included: Sequence[str],
    compared: Sequence[tuple[str, str]],
) -> OrdinalFigures:
    """The ordinal rubric's figures on its labels (``compared``: the key each compared
    rater's figures were computed under, and its name in the report)."""
    m = len(included)
    return OrdinalFigures(
        order=list(s.cats),
        gwet_ac2={
            "linear": figure_of(est["ord.ac2.linear"]),
            "quadratic": figure_of(est["ord.ac2.quadratic"]),
        },
        krippendorff_alpha=figure_of(est["ord.alpha"]),
        weighted_kappa=[
            WeightedPair(a=included[i], b=included[j], kappa=figure_of(est[f"ord.wk.{i}.{j}"]))
            for i in range(m)
            for j in range(i + 1, m)
        ],
        weighted_kappa_vs_reference={
            shown: figure_of(est[f"ord.wk.ref.{key}"])
            for key, shown in compared
            if f"ord.wk.ref.{key}" in est
        },
    )
