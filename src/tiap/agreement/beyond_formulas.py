"""Agreement figures beyond Cohen's and Fleiss' kappa, as sums of per-case features (the
conventions of :mod:`tiap.agreement.formulas`: a point estimate is ``finish`` of the
features' sums, a bootstrap replicate ``finish`` of their weighted sums).

Every figure counts categories over the rubric's full label list (``k``), used or not:
a label nobody gave still counts (irrCAC infers the categories from the data unless
given them, and then differs).

**Gwet's AC1 and AC2** (Gwet 2008, "Computing inter-rater reliability and its variance
in the presence of high agreement", BJMSP 61:29-48; *Handbook of Inter-Rater
Reliability*, 4th ed. 2014, ch. 2-4), over any number of raters with missing labels,
as irrCAC's ``gwet.ac1.raw`` computes them. With ``r_ik`` the raters who gave case ``i``
category ``k``, ``r_i = sum_k r_ik``, weights ``w_kl`` (identity for AC1) and
``r*_ik = sum_l w_kl r_il``::

    p_a = mean over cases with r_i >= 2 of  sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1))
    pi_k = mean over cases with r_i >= 1 of  r_ik / r_i
    p_e = (sum_kl w_kl) / (q (q - 1)) * sum_k pi_k (1 - pi_k)
    AC = (p_a - p_e) / (1 - p_e)

Weights: ``linear`` ``1 - |k - l| / (q - 1)``, ``quadratic`` ``1 - (k - l)**2 / (q -
1)**2`` (Gwet's; his "ordinal" weights are another set, and none of them is
Krippendorff's ordinal metric below). Features keep every sum an integer: the weights
are scaled by their denominator ``D`` (``q - 1`` or ``(q - 1)**2``) and sums are split
by ``r_i``.

Worked by hand, two raters, the kappa paradox table ``[[90, 5], [4, 1]]`` (n = 100):
``p_a = 91/100``; ``pi = ((95 + 94)/200, (5 + 6)/200) = (0.945, 0.055)``; ``p_e = 2/2 x
(0.945 x 0.055 + 0.055 x 0.945) = 0.10395``; AC1 ``= (0.91 - 0.10395)/(1 - 0.10395) =
0.89956``, where Cohen's kappa is ``(0.91 - 0.8986)/(1 - 0.8986) = 0.1346`` (``p_e =
0.95 x 0.94 + 0.05 x 0.06``).

Gwet's abstractors table (3 x 3, rows one abstractor, columns the other:
``[[13, 0, 0], [0, 20, 7], [0, 4, 56]]``, n = 100): ``p_a = 0.89``; ``pi = (0.13, 0.255,
0.615)``; ``p_e = 3/6 x (0.1131 + 0.189975 + 0.236775) = 0.269925``; AC1 ``= 0.620075 /
0.730075 = 0.84933``. Quadratic weights (1 on the diagonal, 0.75 next to it, 0 in the
corners; ``sum w = 6``): ``p_a = 0.89 + 0.75 x 11/100 = 0.9725``; ``p_e = 6/6 x 0.53985``;
AC2 ``= 0.43265 / 0.46015 = 0.94024``.

**Weighted Cohen's kappa** of two raters (Cohen 1968), disagreement weights ``v_kl``
(``|k - l|`` linear, ``(k - l)**2`` quadratic) on the confusion matrix ``M`` with
margins ``a``, ``b``: ``kappa_w = 1 - sum v M / sum v (a b^T / n)`` (what
``sklearn.metrics.cohen_kappa_score(weights=..., labels=...)`` computes).

**Krippendorff's alpha, ordinal metric** (Krippendorff 2011, "Computing Krippendorff's
alpha-reliability"): from the coincidence matrix ``o_ck = sum_u (n_uc n_uk - [c = k]
n_uc) / (m_u - 1)`` over units with ``m_u >= 2`` values, its margins ``n_c`` and ``n``,
and the ordinal distance ``delta_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)**2``:
``alpha = 1 - (n - 1) sum o delta / sum n_c n_k delta`` (what ``krippendorff.alpha(...,
level_of_measurement="ordinal")`` computes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

import numpy as np

from tiap.agreement.formulas import Stat, confusion_features, counts_matrix

Weighting = Literal["identity", "linear", "quadratic"]
#: Cohen's weighted kappa: linear or quadratic disagreement weights
KappaWeighting = Literal["linear", "quadratic"]


def agreement_weights(k: int, weighting: Weighting) -> tuple[np.ndarray, int]:
    """Gwet's agreement weights as integers and their denominator ``D`` (``w = W / D``)."""
    i = np.arange(k)
    gap = np.abs(i[:, None] - i[None, :])
    scale = _SCALED.get(weighting)
    if scale is None or k < 2:
        return np.eye(k, dtype=np.int64), 1
    return scale(gap, k - 1)


_SCALED: Mapping[str, Callable[[np.ndarray, int], tuple[np.ndarray, int]]] = {
    "linear": lambda gap, d: (d - gap, d),
    "quadratic": lambda gap, d: (d * d - gap * gap, d * d),
}


def weights_matrix(k: int, weighting: Weighting) -> np.ndarray:
    """Gwet's agreement weights ``w_kl`` as floats."""
    scaled, d = agreement_weights(k, weighting)
    return scaled / d


def disagreement_weights(k: int, weighting: KappaWeighting) -> np.ndarray:
    """Cohen's weighted-kappa disagreement weights ``|k - l|`` or ``(k - l)**2``."""
    i = np.arange(k, dtype=np.float64)
    gap = np.abs(i[:, None] - i[None, :])
    return gap if weighting == "linear" else gap * gap


# ----------------------------------------------------------- Gwet, any raters


def gwet_stat(codes: np.ndarray, k: int, weighting: Weighting = "identity") -> Stat:
    """Gwet's AC1 (``identity``) or AC2 (``linear``, ``quadratic``) over the raters of
    ``codes`` (cases x raters, negative = no valid label); see the module doc."""
    m = codes.shape[1]
    counts = counts_matrix(codes, k)
    r = counts.sum(axis=1)
    scaled, d = agreement_weights(k, weighting)
    weighted = counts @ scaled.T.astype(np.float64)  # r*_ik scaled by D
    pa_num = (counts * (weighted - d)).sum(axis=1)
    sizes = np.arange(1, max(m, 1) + 1)
    of_size = (r[:, None] == sizes[None, :]).astype(np.float64)  # n x m
    blocks = [of_size, of_size * pa_num[:, None]]
    blocks += [of_size[:, j : j + 1] * counts for j in range(len(sizes))]
    feats = np.column_stack(blocks)
    ns = len(sizes)
    total_w = float(scaled.sum()) / d
    pair_den = np.where(sizes >= 2, d * sizes * (sizes - 1.0), np.inf)

    def parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rated, pa_sum = s[:, :ns], s[:, ns : 2 * ns]
        pi_sum = s[:, 2 * ns :].reshape(-1, ns, k)
        n1 = rated.sum(axis=1)
        n2 = rated[:, 1:].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            pa = (pa_sum / pair_den).sum(axis=1) / n2
            pi = (pi_sum / sizes[None, :, None]).sum(axis=1) / n1[:, None]
        return pa, pi, n2

    def finish(s: np.ndarray) -> np.ndarray:
        pa, pi, n2 = parts(s)
        if k < 2:
            return np.full(s.shape[0], np.nan)
        pe = total_w * (pi * (1.0 - pi)).sum(axis=1) / (k * (k - 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            value = (pa - pe) / (1.0 - pe)
        return np.where((n2 == 0) | (pe >= 1.0), np.nan, value)

    def explain(s: np.ndarray) -> str | None:
        if k < 2:
            return "fewer than two labels on the scale"
        if s[1:ns].sum() == 0:
            return "no case has two or more valid labels"
        return None

    return Stat(feats, finish, explain, int((r >= 2).sum()))


# ------------------------------------------------------------- two raters


def _confusion(s: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    conf = s.reshape(-1, k, k)
    return conf, conf.sum(axis=(1, 2))


def _pair_gwet_from_sums(s: np.ndarray, k: int, weights: np.ndarray) -> np.ndarray:
    conf, n = _confusion(s, k)
    if k < 2:
        return np.full(conf.shape[0], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = (conf * weights).sum(axis=(1, 2)) / n
        pi = (conf.sum(axis=2) + conf.sum(axis=1)) / (2.0 * n[:, None])
        pe = weights.sum() * (pi * (1.0 - pi)).sum(axis=1) / (k * (k - 1))
        value = (pa - pe) / (1.0 - pe)
    return np.where((n == 0) | (pe >= 1.0), np.nan, value)


def _weighted_kappa_from_sums(s: np.ndarray, k: int, v: np.ndarray) -> np.ndarray:
    conf, n = _confusion(s, k)
    rows, cols = conf.sum(axis=2), conf.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]
        den = (v * expected).sum(axis=(1, 2))
        value = 1.0 - (v * conf).sum(axis=(1, 2)) / den
    return np.where((n == 0) | (den == 0), np.nan, value)


def _explain_pair(s: np.ndarray, k: int, what: str) -> str | None:
    conf = s.reshape(k, k)
    if conf.sum() == 0:
        return "no case labelled validly by both"
    if k < 2:
        return "fewer than two labels on the scale"
    if what == "weighted" and (conf.sum(axis=1) > 0).sum() * (conf.sum(axis=0) > 0).sum() <= 1:
        return "both gave one and the same category on every case: chance agreement is 1"
    return None


def pair_gwet_stat(a: np.ndarray, b: np.ndarray, k: int, weighting: Weighting = "identity") -> Stat:
    """Gwet's AC1/AC2 of two raters on the cases both labelled validly."""
    feats = confusion_features(a, b, k)
    w = weights_matrix(k, weighting)
    return Stat(
        feats,
        lambda s: _pair_gwet_from_sums(s, k, w),
        lambda s: _explain_pair(s, k, "gwet"),
        int(feats.sum()),
    )


def weighted_kappa_stat(
    a: np.ndarray, b: np.ndarray, k: int, weighting: KappaWeighting = "quadratic"
) -> Stat:
    """Cohen's weighted kappa of two raters on the cases both labelled validly."""
    feats = confusion_features(a, b, k)
    v = disagreement_weights(k, weighting)
    return Stat(
        feats,
        lambda s: _weighted_kappa_from_sums(s, k, v),
        lambda s: _explain_pair(s, k, "weighted"),
        int(feats.sum()),
    )


def pair_gwet(conf: np.ndarray, weighting: Weighting = "identity") -> float:
    """Gwet's AC1/AC2 of a two-rater contingency table (NaN when undefined)."""
    table = np.asarray(conf, dtype=np.float64)
    k = table.shape[0]
    return float(_pair_gwet_from_sums(table.reshape(1, -1), k, weights_matrix(k, weighting))[0])


# ---------------------------------------------------- Krippendorff, ordinal


def ordinal_alpha_stat(codes: np.ndarray, k: int) -> Stat:
    """Krippendorff's alpha with the ordinal metric (see the module doc), missing labels
    allowed; the coincidences are kept split by unit size so every sum is an integer."""
    m = codes.shape[1]
    counts = counts_matrix(codes, k)
    m_u = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(k)
    pairs[:, idx, idx] -= counts
    pairs = pairs.reshape(len(codes), k * k)
    sizes = np.arange(2, max(m, 2) + 1)
    feats = np.column_stack([(m_u == j)[:, None] * pairs for j in sizes])
    inv = 1.0 / (sizes - 1.0)
    lo = np.minimum(idx[:, None], idx[None, :])
    hi = np.maximum(idx[:, None], idx[None, :])

    def coincidences(s: np.ndarray) -> np.ndarray:
        by_size = s.reshape(-1, len(sizes), k * k)
        return (by_size * inv[None, :, None]).sum(axis=1).reshape(-1, k, k)

    def finish(s: np.ndarray) -> np.ndarray:
        o = coincidences(s)
        nc = o.sum(axis=2)
        n = nc.sum(axis=1)
        cum = np.cumsum(nc, axis=1)
        span = cum[:, hi] - cum[:, lo] + nc[:, lo]
        delta = (span - (nc[:, :, None] + nc[:, None, :]) / 2.0) ** 2
        expected = (nc[:, :, None] * nc[:, None, :] * delta).sum(axis=(1, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = 1.0 - (n - 1.0) * (o * delta).sum(axis=(1, 2)) / expected
        return np.where(expected <= 0, np.nan, alpha)

    def explain(s: np.ndarray) -> str | None:
        nc = coincidences(s[None, :])[0].sum(axis=1)
        if nc.sum() == 0:
            return "no case has two or more valid labels"
        if (nc > 0).sum() <= 1:
            return "every label is the same category: expected disagreement is 0"
        return None

    return Stat(feats, finish, explain, int((m_u >= 2).sum()))


def point(stat: Stat) -> float:
    """A stat's value on the full sample (NaN when undefined)."""
    return float(stat.finish(stat.features.sum(axis=0)[None, :])[0])
