"""Chance-corrected agreement as plain point estimates: Cohen's kappa of two label
vectors and Krippendorff's alpha (nominal or ordinal) of any number of raters.

Labels are category indices ``0..k-1``; a negative index is a missing or invalid
label. A figure that is undefined (no pairable data, or every label the same
category, so chance agreement is 1) is ``None``.

- **Cohen's kappa** (Cohen 1960) over the items both raters labelled:
  ``(p_o - p_e) / (1 - p_e)``, ``p_o`` the share of items on which they agree and
  ``p_e = sum_c p_a(c) p_b(c)`` from each rater's own marginal shares
  (``sklearn.metrics.cohen_kappa_score``; the tests check it).
- **Krippendorff's alpha** (Krippendorff 2011, "Computing Krippendorff's
  alpha-reliability") from the coincidence matrix: each item with ``m_u >= 2``
  valid labels adds ``1 / (m_u - 1)`` to ``o[c, k]`` for every ordered pair of its
  labels from different raters; ``n_c = sum_k o[c, k]``, ``n = sum_c n_c``;
  ``alpha = 1 - (n - 1) * sum o[c,k] d(c,k) / sum_{c,k} n_c n_k d(c,k)``, with the
  squared difference ``d`` of the level of measurement: **nominal** ``d = 0`` for
  equal categories and 1 otherwise; **ordinal** (categories in rank order)
  ``d(c, k) = (sum_{g=c}^{k} n_g - (n_c + n_k) / 2)^2``. The ``krippendorff``
  package gives the same values (the tests check it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["AlphaLevel", "cohen_kappa", "krippendorff_alpha"]

AlphaLevel = Literal["nominal", "ordinal"]


def cohen_kappa(a: Sequence[int], b: Sequence[int], k: int) -> float | None:
    """Cohen's kappa of two raters over the items both labelled (``None``: no such
    item, or chance agreement is 1)."""
    x, y = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    both = (x >= 0) & (y >= 0) & (x < k) & (y < k)
    x, y = x[both], y[both]
    n = len(x)
    if n == 0:
        return None
    p_o = float((x == y).mean())
    pa = np.bincount(x, minlength=k) / n
    pb = np.bincount(y, minlength=k) / n
    p_e = float((pa * pb).sum())
    if p_e >= 1.0 - 1e-15:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def _distances(counts: np.ndarray, level: AlphaLevel) -> np.ndarray:
    k = len(counts)
    if level == "nominal":
        return 1.0 - np.eye(k)
    cum = np.concatenate([[0.0], np.cumsum(counts)])
    d = np.zeros((k, k))
    for c in range(k):
        for g in range(c, k):
            between = cum[g + 1] - cum[c] - (counts[c] + counts[g]) / 2.0
            d[c, g] = d[g, c] = between**2
    return d


def krippendorff_alpha(
    data: Sequence[Sequence[int]] | np.ndarray, k: int, level: AlphaLevel = "nominal"
) -> float | None:
    """Krippendorff's alpha of ``data``, **raters x items** (negative: missing), on
    ``k`` categories at ``level`` (see the module docstring)."""
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"level must be 'nominal' or 'ordinal', not {level!r}")
    codes = np.asarray(data, dtype=np.int64)
    if codes.ndim != 2 or codes.size == 0:
        return None
    valid = (codes >= 0) & (codes < k)
    onehot = (codes[:, :, None] == np.arange(k)[None, None, :]) & valid[:, :, None]
    per_item = onehot.sum(axis=0).astype(np.float64)  # items x categories
    m_u = per_item.sum(axis=1)
    pairable = m_u >= 2
    if not pairable.any():
        return None
    counts = per_item[pairable]
    weights = 1.0 / (m_u[pairable] - 1.0)
    # o[c, k] = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1)
    o = np.einsum("u,uc,uk->ck", weights, counts, counts)
    o -= np.diag((counts * weights[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d = _distances(n_c, level)
    expected = float((np.outer(n_c, n_c) * d).sum())
    if expected <= 0.0:
        return None
    observed = float((o * d).sum())
    return 1.0 - (n - 1.0) * observed / expected
