"""What a judge's agreement with the reference is worth: the constant predictor's
accuracy beside it, how the judges' errors go together, and whether the majority beats
its best single judge.

**Constant-predictor baseline.** On the cases a rater and the reference both labelled
validly (confusion matrix ``M``, rows the reference, ``n`` cases), the predictor that
always gives the reference's most frequent label scores ``max_c row_c / n``
(accuracy) and ``1 / C`` (balanced accuracy, the mean recall over the ``C`` labels the
reference gave). The rater's ``margin`` is ``tr(M) / n - max_c row_c / n`` and its
balanced accuracy ``mean_c M_cc / row_c``; both are resampled with the report's figures
(the baseline is estimated on the same cases, so its uncertainty is in the interval).

**Error correlation** of judges ``a`` and ``b`` on the ``n`` cases where both and the
reference gave a valid label, with ``e_a``, ``e_b`` the indicators "differs from the
reference", ``n_a = sum e_a``, ``n_b = sum e_b``, ``n_ab = sum e_a e_b``::

    phi = (n n_ab - n_a n_b) / sqrt(n_a (n - n_a) n_b (n - n_b))
    ratio = P(both wrong) / (P(a wrong) P(b wrong)) = n n_ab / (n_a n_b)

``phi`` 0 and ``ratio`` 1 when errors are independent; a ratio well above 1 means the
judges err on the same cases, so more of them buy less than independent votes would.

**Majority vs its best judge.** On the cases with a reference label, a case is right
for the majority when its decided label equals the reference's (no decided majority:
wrong) and right for a judge when its valid label does (invalid or missing: wrong). The
best judge is the one right most often (the first named on a tie); the difference of
the two accuracies carries a paired bootstrap interval (:func:`tiap.stats.paired_bootstrap`,
the report's resamples and seed): both are measured on the same cases, and the
resamples keep each case's pair together.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import numpy as np

from tiap.agreement.beyond_models import (
    Baseline,
    ErrorCorrelation,
    JudgeErrors,
    MajorityVsBest,
)
from tiap.agreement.estimates import Estimate
from tiap.agreement.figure_model import Figure, figure_of
from tiap.agreement.formulas import Stat, confusion_features
from tiap.agreement.scale import Scale
from tiap.stats import paired_bootstrap, percentile_reliable


def _confusion(s: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    conf = s.reshape(-1, k, k)
    return conf, conf.sum(axis=(1, 2)), conf.sum(axis=2)


def _margin(s: np.ndarray, k: int) -> np.ndarray:
    conf, n, rows = _confusion(s, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (np.trace(conf, axis1=1, axis2=2) - rows.max(axis=1)) / n
    return np.where(n == 0, np.nan, value)


def _balanced(s: np.ndarray, k: int) -> np.ndarray:
    conf, n, rows = _confusion(s, k)
    present = rows > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(present, np.diagonal(conf, axis1=1, axis2=2) / rows, 0.0)
        value = recall.sum(axis=1) / present.sum(axis=1)
    return np.where(n == 0, np.nan, value)


def _balanced_margin(s: np.ndarray, k: int) -> np.ndarray:
    present = (s.reshape(-1, k, k).sum(axis=2) > 0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _balanced(s, k) - 1.0 / present


def _no_case(s: np.ndarray) -> str | None:
    return "no case labelled validly by both" if s.sum() == 0 else None


def baseline_stats(s: Scale, compared: Sequence[tuple[str, np.ndarray]]) -> dict[str, Stat]:
    """``base.{margin,bacc,bmargin}.<scale>.<rater>`` for each compared rater."""
    out: dict[str, Stat] = {}
    if s.ref is None:
        return out
    k = s.k
    for name, codes in compared:
        feats = confusion_features(s.ref, codes, k)
        n = int(feats.sum())
        for key, finish in (
            ("margin", _margin),
            ("bacc", _balanced),
            ("bmargin", _balanced_margin),
        ):
            out[f"base.{key}.{s.name}.{name}"] = Stat(feats, partial(finish, k=k), _no_case, n)
    return out


def baseline(s: Scale, est: dict[str, Estimate], rater: str, confusion: np.ndarray) -> Baseline:
    """A compared rater's baseline figures on a scale (``confusion``: rows the reference)."""
    rows = confusion.sum(axis=1)
    n = int(rows.sum())
    present = int((rows > 0).sum())
    return Baseline(
        majority_label=s.cats[int(rows.argmax())] if n else None,
        accuracy=float(rows.max() / n) if n else None,
        balanced_accuracy=1.0 / present if present else None,
        classes=present,
        margin=figure_of(est[f"base.margin.{s.name}.{rater}"]),
        rater_balanced_accuracy=figure_of(est[f"base.bacc.{s.name}.{rater}"]),
        balanced_margin=figure_of(est[f"base.bmargin.{s.name}.{rater}"]),
    )


# ------------------------------------------------------------ error correlation


def _error_features(ref: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    scored = (ref >= 0) & (a >= 0) & (b >= 0)
    ea, eb = scored & (a != ref), scored & (b != ref)
    return np.column_stack([scored, ea, eb, ea & eb]).astype(np.float64)


def _phi(s: np.ndarray) -> np.ndarray:
    n, na, nb, nab = s.T
    den = np.sqrt(na * (n - na) * nb * (n - nb))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (n * nab - na * nb) / den, np.nan)


def _ratio(s: np.ndarray) -> np.ndarray:
    n, na, nb, nab = s.T
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(na * nb > 0, n * nab / (na * nb), np.nan)


def _explain_errors(s: np.ndarray) -> str | None:
    n, na, nb, _ = s
    if n == 0:
        return "no case labelled validly by both judges and the reference"
    if na == 0 or nb == 0:
        return "a judge made no error against the reference"
    if na == n or nb == n:
        return "a judge erred on every case"
    return None


def error_stats(s: Scale, judges: Sequence[tuple[str, np.ndarray]]) -> dict[str, Stat]:
    """``err.{phi,ratio}.<scale>.<i>.<j>`` for each pair of judges."""
    out: dict[str, Stat] = {}
    if s.ref is None:
        return out
    for i in range(len(judges)):
        for j in range(i + 1, len(judges)):
            feats = _error_features(s.ref, judges[i][1], judges[j][1])
            n = int(feats[:, 0].sum())
            out[f"err.phi.{s.name}.{i}.{j}"] = Stat(feats, _phi, _explain_errors, n)
            out[f"err.ratio.{s.name}.{i}.{j}"] = Stat(feats, _ratio, _explain_errors, n)
    return out


def _correlations(
    s: Scale, est: dict[str, Estimate], judges: Sequence[tuple[str, np.ndarray]]
) -> list[ErrorCorrelation]:
    out = []
    ref = s.ref if s.ref is not None else np.full(len(s.votes.winner), -1)
    for i in range(len(judges)):
        for j in range(i + 1, len(judges)):
            feats = _error_features(ref, judges[i][1], judges[j][1])
            out.append(
                ErrorCorrelation(
                    a=judges[i][0],
                    b=judges[j][0],
                    n=int(feats[:, 0].sum()),
                    both_wrong=int(feats[:, 3].sum()),
                    phi=figure_of(est[f"err.phi.{s.name}.{i}.{j}"]),
                    ratio=figure_of(est[f"err.ratio.{s.name}.{i}.{j}"]),
                )
            )
    return out


class _Duel(NamedTuple):
    """One scale's majority against its best judge, on the cases with a reference label."""

    best: str
    majority: np.ndarray
    judge: np.ndarray
    scored: np.ndarray


def _duel(s: Scale, judges: Sequence[tuple[str, np.ndarray]]) -> _Duel | None:
    ref = s.ref
    if ref is None or not judges:
        return None
    scored = ref >= 0
    if not scored.any():
        return None
    right = {name: (codes == ref)[scored].astype(np.float64) for name, codes in judges}
    best = max(right, key=lambda name: (right[name].sum(), -list(right).index(name)))
    majority = (s.votes.winner == ref)[scored].astype(np.float64)
    return _Duel(best, majority, right[best], scored)


def _intervals(duels: list[_Duel], resamples: int, seed: int) -> list[list[float] | None]:
    """The paired bootstrap interval of each duel's accuracy difference: one pass for
    the duels on the same cases (a column each)."""
    out: list[list[float] | None] = [None] * len(duels)
    if not resamples:
        return out
    groups: dict[bytes, list[int]] = {}
    for i, d in enumerate(duels):
        groups.setdefault(np.packbits(d.scored).tobytes(), []).append(i)
    for members in groups.values():
        diffs = np.column_stack([duels[i].majority - duels[i].judge for i in members])
        result = paired_bootstrap(diffs, resamples=resamples, seed=seed)
        for col, i in enumerate(members):
            low, high = float(result.low[col]), float(result.high[col])
            if np.isfinite(low) and np.isfinite(high):
                out[i] = [low, high]
    return out


def _versus(d: _Duel, ci: list[float] | None) -> MajorityVsBest:
    n = len(d.majority)
    return MajorityVsBest(
        best_judge=d.best,
        n=n,
        majority_accuracy=float(d.majority.mean()),
        judge_accuracy=float(d.judge.mean()),
        difference=Figure(
            value=float((d.majority - d.judge).mean()),
            ci=ci,
            n=n,
            ci_method="percentile" if ci else None,
            ci_unreliable=ci is not None and not percentile_reliable(n),
        ),
    )


def stats(
    scales: Sequence[Scale],
    compared: Sequence[tuple[str, Sequence[np.ndarray]]],
    judges: Sequence[str],
) -> dict[str, Stat]:
    """Every resampled figure of this module: the baselines of each compared rater
    (``compared``: name and codes per scale) and the error correlations of the judges
    among them."""
    out: dict[str, Stat] = {}
    for i, s in enumerate(scales):
        out.update(baseline_stats(s, [(name, codes[i]) for name, codes in compared]))
        out.update(error_stats(s, of_scale(compared, judges, i)))
    return out


def of_scale(
    compared: Sequence[tuple[str, Sequence[np.ndarray]]], judges: Sequence[str], i: int
) -> list[tuple[str, np.ndarray]]:
    """The judges among the compared raters, with their codes on scale ``i``."""
    return [(name, codes[i]) for name, codes in compared if name in judges]


def judge_errors(
    scales: Sequence[Scale],
    est: dict[str, Estimate],
    compared: Sequence[tuple[str, Sequence[np.ndarray]]],
    judges: Sequence[str],
    *,
    resamples: int,
    seed: int,
) -> dict[str, JudgeErrors]:
    """Per scale: the judges' error correlations and the majority against its best
    judge (empty without a reference)."""
    if not scales or scales[0].ref is None:
        return {}
    by_scale = [of_scale(compared, judges, i) for i in range(len(scales))]
    duels = [_duel(s, j) for s, j in zip(scales, by_scale, strict=True)]
    found = [d for d in duels if d is not None]
    intervals = dict(zip(map(id, found), _intervals(found, resamples, seed), strict=True))
    out = {}
    for s, j, d in zip(scales, by_scale, duels, strict=True):
        if not j:
            out[s.name] = JudgeErrors(reason="no judge compared with the reference")
            continue
        out[s.name] = JudgeErrors(
            error_correlation=_correlations(s, est, j),
            majority_vs_best=_versus(d, intervals[id(d)]) if d is not None else None,
            reason=None if len(j) > 1 else "one judge: no pair to correlate",
        )
    return out
