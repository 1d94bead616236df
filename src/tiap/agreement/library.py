"""The report's point estimates through the reference libraries.

Fleiss' kappa comes from statsmodels, Krippendorff's alpha from krippendorff,
Cohen's kappa (weighted too), the confusion matrices and accuracy from scikit-learn;
Krippendorff's alpha at the ordinal level from krippendorff too. Each
function takes tiap's codes (category indices ``0..K-1``, negative for a missing
or invalid label), puts them in the shape the library wants (see the traps
below) and returns ``None`` where the figure is undefined: there the libraries
return NaN (with a RuntimeWarning) or raise ``ValueError``, so those inputs are
recognised first and never reach them. The bootstrap intervals, percent
agreement and majority votes stay in :mod:`tiap.agreement.formulas`, whose formulas
the tests check against these libraries.

The libraries are imported inside the functions, so ``import tiap.agreement``
and ``tiap --help`` do not load them.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from tiap.agreement.formulas import counts_matrix


def fleiss_kappa(codes: np.ndarray, k: int) -> float | None:
    """Fleiss' kappa (``statsmodels.stats.inter_rater.fleiss_kappa``) of a cases x
    raters codes matrix, over the cases every rater labelled validly.

    statsmodels wants an items x categories count table with the same number of
    raters on every item (its ``aggregate_raters`` would count a missing label as
    one more category): the table is built here from the complete cases only.
    ``None`` with fewer than two raters (the library: NaN), no complete case
    (``ValueError``) or one category on every complete case (NaN).
    """
    m = codes.shape[1]
    complete = codes[(codes >= 0).all(axis=1)] if m else codes[:0]
    table = counts_matrix(complete, k)
    if m < 2 or not len(table) or int((table.sum(axis=0) > 0).sum()) < 2:
        return None
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

    with np.errstate(all="ignore"):
        return _finite(sm_fleiss_kappa(table, method="fleiss"))


def krippendorff_alpha(codes: np.ndarray, k: int) -> float | None:
    """Krippendorff's alpha, nominal (``krippendorff.alpha``), of a cases x raters
    codes matrix; missing labels allowed.

    The library wants raters x items with NaN for a missing value (items x raters
    gives a silently wrong value) and is given the value domain ``0..K-1``.
    ``None`` when no case has two valid labels (the library: ``ValueError``) or
    the labels on such cases are all one category (NaN).
    """
    return _alpha(codes, k, "nominal")


def cohen_kappa(a: np.ndarray, b: np.ndarray, k: int) -> float | None:
    """Cohen's kappa (``sklearn.metrics.cohen_kappa_score``) of two code vectors on
    the cases both labelled validly (the library takes no NaN), with
    ``labels=0..K-1`` so categories neither used do not change the result.

    ``None`` when no case is labelled validly by both (the library:
    ``ValueError``) or both gave one and the same category on every case (NaN,
    with a warning).
    """
    x, y = _both_valid(a, b)
    if not len(x) or len(np.union1d(x, y)) < 2:
        return None
    from sklearn.metrics import cohen_kappa_score

    return _finite(cohen_kappa_score(x, y, labels=list(range(k))))


def weighted_kappa(a: np.ndarray, b: np.ndarray, k: int, weights: str) -> float | None:
    """Cohen's weighted kappa (``sklearn.metrics.cohen_kappa_score(weights=...)``,
    ``linear`` or ``quadratic``) on the cases both labelled validly, categories
    ``0..K-1`` in their order; ``None`` where :func:`cohen_kappa` is."""
    x, y = _both_valid(a, b)
    if not len(x) or len(np.union1d(x, y)) < 2:
        return None
    from sklearn.metrics import cohen_kappa_score

    with np.errstate(all="ignore"):
        return _finite(cohen_kappa_score(x, y, labels=list(range(k)), weights=weights))


def ordinal_alpha(codes: np.ndarray, k: int) -> float | None:
    """Krippendorff's alpha at the ordinal level (``krippendorff.alpha``), categories
    ``0..K-1`` in their order; ``None`` where :func:`krippendorff_alpha` is."""
    return _alpha(codes, k, "ordinal")


def confusion_matrix(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """K x K counts (``sklearn.metrics.confusion_matrix`` with ``labels=0..K-1``;
    rows: ``a``'s category, columns: ``b``'s) over the cases both labelled validly;
    all zeros when there is none (the library: ``ValueError``). With a single
    category the library warns that its matrix may have the wrong shape: the one
    cell holds every case."""
    x, y = _both_valid(a, b)
    if not len(x):
        return np.zeros((k, k), dtype=np.int64)
    if k < 2:  # one category: every case in the one cell (the library warns)
        return np.array([[len(x)]], dtype=np.int64)
    from sklearn.metrics import confusion_matrix as sk_confusion_matrix

    return np.asarray(sk_confusion_matrix(x, y, labels=list(range(k))), dtype=np.int64)


def accuracy(a: np.ndarray, b: np.ndarray) -> float | None:
    """Share of the cases both labelled validly on which they agree
    (``sklearn.metrics.accuracy_score``); ``None`` when there is no such case (the
    library: ``ValueError``)."""
    x, y = _both_valid(a, b)
    if not len(x):
        return None
    from sklearn.metrics import accuracy_score

    return _finite(accuracy_score(x, y))


def _both_valid(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    both = (a >= 0) & (b >= 0)
    return a[both], b[both]


def _finite(value: float) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _alpha(codes: np.ndarray, k: int, level: Literal["nominal", "ordinal"]) -> float | None:
    """``krippendorff.alpha`` at ``level`` on a cases x raters codes matrix (see
    :func:`krippendorff_alpha`)."""
    valid = codes >= 0
    pairable = valid.sum(axis=1) >= 2
    if len(np.unique(codes[pairable][valid[pairable]])) < 2:
        return None
    import krippendorff

    reliability = np.where(valid, codes, np.nan).T.astype(np.float64)
    with np.errstate(all="ignore"):
        value = krippendorff.alpha(
            reliability_data=reliability,
            level_of_measurement=level,
            value_domain=list(range(k)),
        )
    return _finite(value)
