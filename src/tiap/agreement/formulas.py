"""The formulas of the agreement figures, written as sums of per-case features.

Every figure here (Fleiss' kappa, Krippendorff's alpha, Cohen's kappa, percent
agreement, accuracy) is a function of a few sums over cases of integer-valued
per-case features. So a point estimate is ``finish(features.sum(0))`` and a
bootstrap replicate is ``finish(weights @ features)`` where ``weights`` counts
how often each case was drawn: a chunk of replicates in one matrix product
(:mod:`tiap.stats.bootstrap`), exact (integer sums in float64) and therefore
bit-for-bit reproducible.

Conventions: ``codes`` is a cases x raters integer matrix whose entries are
category indices ``0..K-1``, or negative for a missing or invalid label.
``finish`` functions take sums of shape ``(B, F)`` and return ``(B,)`` values
with ``NaN`` where the figure is undefined; ``explain`` says why for one row of
sums (``None`` when defined).

These formulas give the bootstrap replicates and the figures no library
computes (percent agreement). A report's point estimate of Fleiss' kappa,
Krippendorff's alpha, Cohen's kappa and accuracy comes from the reference
library instead (:mod:`tiap.agreement.library`, attached as :attr:`Stat.point`);
the ``fleiss_kappa``, ``krippendorff_alpha`` and ``cohen_kappa`` helpers below are
these formulas on the full sample, which the tests compare with the libraries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Finish = Callable[[np.ndarray], np.ndarray]
Explain = Callable[[np.ndarray], str | None]


@dataclass(frozen=True)
class Stat:
    """A figure defined by per-case features and how to finish their sums."""

    features: np.ndarray  # (n_cases, F), integer-valued float64
    finish: Finish
    explain: Explain
    n: int  # cases the point estimate uses
    #: the point estimate on the full sample from a reference library (``None``
    #: where it is undefined); without it the point estimate is ``finish`` of the sums
    point: Callable[[], float | None] | None = None


def counts_matrix(codes: np.ndarray, k: int) -> np.ndarray:
    """Cases x categories: how many raters gave each category (valid labels only)."""
    onehot = codes[:, :, None] == np.arange(k)[None, None, :]
    return onehot.sum(axis=1).astype(np.float64)


def _single_category(cat_sums: np.ndarray) -> np.ndarray:
    return (cat_sums > 0).sum(axis=1) <= 1


# ------------------------------------------------------------------ Fleiss' kappa


def fleiss_stat(codes: np.ndarray, k: int) -> Stat:
    """Fleiss' kappa over the cases every rater labelled validly.

    Per complete case i with counts C_ik over m raters:
    P_i = (sum_k C_ik^2 - m) / (m (m-1)); P = mean P_i; p_k = sum_i C_ik / (N m);
    P_e = sum_k p_k^2; kappa = (P - P_e) / (1 - P_e).
    """
    n_cases, m = codes.shape
    counts = counts_matrix(codes, k)
    complete = np.asarray((codes >= 0).all(axis=1), dtype=np.float64) if m else np.zeros(n_cases)
    sq = (counts**2).sum(axis=1) - m
    feats = np.column_stack([complete, sq * complete, counts * complete[:, None]])

    def finish(s: np.ndarray) -> np.ndarray:
        big_n, a, c = s[:, 0], s[:, 1], s[:, 2:]
        with np.errstate(divide="ignore", invalid="ignore"):
            p_bar = a / (big_n * m * (m - 1))
            p = c / (big_n * m)[:, None]
            p_e = (p**2).sum(axis=1)
            kappa = (p_bar - p_e) / (1.0 - p_e)
        bad = (big_n == 0) | _single_category(c) | (m < 2)
        return np.where(bad, np.nan, kappa)

    def explain(s: np.ndarray) -> str | None:
        if m < 2:
            return "fewer than two raters"
        if s[0] == 0:
            return "no case has a valid label from every rater"
        if _single_category(s[None, 2:])[0]:
            return "every label is the same category: chance agreement is 1"
        return None

    return Stat(feats, finish, explain, int(complete.sum()))


# ----------------------------------------------------------- Krippendorff's alpha


def krippendorff_stat(codes: np.ndarray, k: int) -> Stat:
    """Krippendorff's alpha (nominal), missing labels allowed.

    Only units with m_u >= 2 valid values are pairable. With n_uc the count of
    category c in unit u: the observed disagreement is
    D = sum_u (m_u^2 - sum_c n_uc^2) / (m_u - 1) (the off-diagonal mass of the
    coincidence matrix), n_c = sum_u n_uc, n = sum_c n_c, and
    alpha = 1 - (n - 1) D / (n^2 - sum_c n_c^2).
    Features keep D split by unit size so every sum stays an integer.
    """
    m = codes.shape[1]
    counts = counts_matrix(codes, k)
    m_u = counts.sum(axis=1)
    pairable = (m_u >= 2).astype(np.float64)
    sizes = np.arange(2, max(m, 2) + 1)
    dis = m_u**2 - (counts**2).sum(axis=1)
    by_size = np.column_stack([(m_u == j) * dis for j in sizes])
    feats = np.column_stack([by_size, counts * pairable[:, None]])
    n_size = len(sizes)
    inv = 1.0 / (sizes - 1.0)

    def finish(s: np.ndarray) -> np.ndarray:
        # elementwise, not a matrix product: the same bits whatever the layout of ``s``
        d = (s[:, :n_size] * inv).sum(axis=1)
        nc = s[:, n_size:]
        n = nc.sum(axis=1)
        e = n**2 - (nc**2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = 1.0 - (n - 1.0) * d / e
        return np.where(e == 0, np.nan, alpha)

    def explain(s: np.ndarray) -> str | None:
        nc = s[n_size:]
        if nc.sum() == 0:
            return "no case has two or more valid labels"
        if (nc > 0).sum() <= 1:
            return "every label is the same category: expected disagreement is 0"
        return None

    return Stat(feats, finish, explain, int(pairable.sum()))


# ------------------------------------------------- two raters: Cohen and accuracy


def confusion_features(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Per case, a one-hot K*K cell (row = a's category, column = b's) where both
    are valid; zeros elsewhere."""
    both = (a >= 0) & (b >= 0)
    cell = np.where(both, a * k + b, -1)
    return (cell[:, None] == np.arange(k * k)[None, :]).astype(np.float64)


def confusion_matrix(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """K x K counts (rows: a, columns: b) over cases where both are valid."""
    return confusion_features(a, b, k).sum(axis=0).reshape(k, k)


def _cohen_from_sums(s: np.ndarray, k: int) -> np.ndarray:
    conf = s.reshape(-1, k, k)
    n = conf.sum(axis=(1, 2))
    agree = np.trace(conf, axis1=1, axis2=2)
    chance = (conf.sum(axis=2) * conf.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        po = agree / n
        pe = chance / n**2
        kappa = (po - pe) / (1.0 - pe)
    return np.where((n == 0) | (chance == n**2), np.nan, kappa)


def _agreement_from_sums(s: np.ndarray, k: int) -> np.ndarray:
    conf = s.reshape(-1, k, k)
    n = conf.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        po = np.trace(conf, axis1=1, axis2=2) / n
    return np.where(n == 0, np.nan, po)


def _explain_pair(s: np.ndarray, k: int, kappa: bool) -> str | None:
    conf = s.reshape(k, k)
    n = conf.sum()
    if n == 0:
        return "no case labelled validly by both"
    if kappa and (conf.sum(axis=1) * conf.sum(axis=0)).sum() == n**2:
        return "both gave one and the same category on every case: chance agreement is 1"
    return None


def cohen_stat(a: np.ndarray, b: np.ndarray, k: int) -> Stat:
    """Cohen's kappa of two raters on the cases both labelled validly.

    From the confusion matrix M (n cases): p_o = tr(M)/n,
    p_e = sum_c row_c col_c / n^2, kappa = (p_o - p_e) / (1 - p_e).
    """
    feats = confusion_features(a, b, k)
    return Stat(
        feats,
        lambda s: _cohen_from_sums(s, k),
        lambda s: _explain_pair(s, k, True),
        int(feats.sum()),
    )


def agreement_stat(a: np.ndarray, b: np.ndarray, k: int) -> Stat:
    """Share of the cases both labelled validly on which they agree (accuracy
    when one of them is the reference)."""
    feats = confusion_features(a, b, k)
    return Stat(
        feats,
        lambda s: _agreement_from_sums(s, k),
        lambda s: _explain_pair(s, k, False),
        int(feats.sum()),
    )


def mean_pairwise_agreement_stat(codes: np.ndarray, k: int) -> Stat:
    """The mean over rater pairs of each pair's percent agreement (pairwise
    deletion; pairs with no common valid case are left out)."""
    m = codes.shape[1]
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    blocks = [confusion_features(codes[:, i], codes[:, j], k) for i, j in pairs]
    kk = k * k
    feats = np.column_stack(blocks) if blocks else np.zeros((codes.shape[0], 0))

    def per_pair(s: np.ndarray) -> np.ndarray:
        return np.column_stack(
            [_agreement_from_sums(s[:, p * kk : (p + 1) * kk], k) for p in range(len(pairs))]
        )

    def finish(s: np.ndarray) -> np.ndarray:
        if not pairs:
            return np.full(s.shape[0], np.nan)
        vals = per_pair(s)
        ok = np.isfinite(vals)
        total = np.where(ok, vals, 0.0).sum(axis=1)
        count = ok.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count == 0, np.nan, total / count)

    def explain(s: np.ndarray) -> str | None:
        if not pairs:
            return "fewer than two raters"
        if not np.isfinite(per_pair(s[None, :])).any():
            return "no pair of raters has a case both labelled validly"
        return None

    valid = (codes >= 0).sum(axis=1)
    return Stat(feats, finish, explain, int((valid >= 2).sum()))


# ------------------------------------------------------------ point-only helpers


def fleiss_kappa(codes: np.ndarray, k: int) -> float:
    """Fleiss' kappa of a codes matrix (NaN when undefined)."""
    return _point(fleiss_stat(codes, k))


def krippendorff_alpha(codes: np.ndarray, k: int) -> float:
    """Krippendorff's alpha, nominal, of a codes matrix (NaN when undefined)."""
    return _point(krippendorff_stat(codes, k))


def cohen_kappa(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Cohen's kappa of two code vectors (NaN when undefined)."""
    return _point(cohen_stat(a, b, k))


def _point(stat: Stat) -> float:
    return float(stat.finish(stat.features.sum(axis=0)[None, :])[0])


def collapse_codes(codes: np.ndarray, mapping: Sequence[int]) -> np.ndarray:
    """Map category codes through ``mapping`` (negative codes stay as they are)."""
    lut = np.asarray(mapping, dtype=np.int64)
    return np.where(codes >= 0, lut[np.clip(codes, 0, None)], codes)
