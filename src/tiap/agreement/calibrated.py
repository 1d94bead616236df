"""Calibrated prevalence: every majority-label share of a report, measured against the
human reference where the cases in scope include labelled ones.

For each set of cases (every case; each dataset, run and category), each scale (the
rubric's labels, its binary collapse) and each label ``c``:

- ``panel``: the share of the cases with a decided majority whose majority is ``c``
  (the report's prevalence, unchanged), with its Wilson interval;
- ``humans``: the share of the labelled cases (a resolved reference label) whose
  reference is ``c``, with its Wilson interval;
- ``ppi``: prediction-powered inference (:mod:`tiap.stats.ppi`, PPI++ with the
  power-tuned weight) of the share of ``c`` on the cases with a decided majority, with
  ``y`` = [reference is ``c``] on the labelled cases and ``f`` = [majority is ``c``] on
  every case; stratified by the cases' sampling strata (those of ``tiap cases
  sample``), each stratum's estimate weighted by ``N_h / N`` and its variance by
  ``(N_h / N)**2``. Strata with fewer than 2 labelled cases are pooled with their
  neighbour in design order (:func:`tiap.stats.ppi.pool_strata`). Cases with no decided
  majority, or whose humans disagree with nobody adjudicating (an unresolved
  reference), are counted and left out. Value and interval are clipped to [0, 1];
- ``effective_n``: the labelled cases alone that would give the ``ppi`` interval's
  width (:func:`tiap.stats.ppi.effective_n`);
- ``rogan_gladen``: for the majority and each compared rater, its share of ``c``
  corrected by its sensitivity and specificity for ``c`` against the reference on the
  labelled cases of the set (:mod:`tiap.stats.prevalence`).

The assumption (:data:`ASSUMPTION`): the labelled cases are a random draw within each
stratum. ``tiap cases sample`` draws them evenly spaced by (run, query index) within a
stratum, which is as good as random when that order is unrelated to the label.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tiap.agreement.calibrated_models import (
    Calibrated,
    CalibratedGroup,
    CorrectedFigure,
    CorrectedShares,
    LabelShare,
    PpiFigure,
    ScaleShares,
    ShareFigure,
    StratumCount,
)
from tiap.agreement.label_table import LabelTable
from tiap.agreement.reference import Reference
from tiap.agreement.scale import Scale
from tiap.agreement.summaries import NO_VALUE, STRATA
from tiap.cases.sample import stratum_order
from tiap.stats import wilson_interval
from tiap.stats.intervals import CONFIDENCE
from tiap.stats.ppi import (
    MIN_LABELLED,
    RELIABLE_PPI_N,
    StratumSample,
    effective_n,
    pool_strata,
    stratified_ppi,
)
from tiap.stats.prevalence import RoganGladen, rogan_gladen

ASSUMPTION = (
    "the labelled cases (those with a human reference label) are a random draw from the "
    "cases of their sampling stratum; the panel's majority label is known on every case"
)
POLICY = (
    f"PPI++ (power-tuned lambda) in each stratum, combined with weights N_h/N (variances "
    f"with (N_h/N)^2); a stratum with fewer than {MIN_LABELLED} labelled cases is pooled "
    "with the next stratum in design order (the last with the one before); cases with no "
    "decided majority or an unresolved reference are counted and left out; values and "
    "intervals clipped to [0, 1]"
)
DESIGN = (
    "the sampling strata of 'tiap cases sample' (rank bucket of the credited memory; for "
    "qrels pairs dataset and grade)"
)
NO_DESIGN = "no sampling stratum recorded for the cases: one stratum (unstratified)"
#: the stratum of a case whose stratum is not recorded
ONE_STRATUM = "(all)"


def _clip(v: float) -> float:
    return min(max(v, 0.0), 1.0)


def _share(count: int, n: int, confidence: float, what: str) -> ShareFigure:
    if not n:
        return ShareFigure(value=None, count=0, n=0, reason=f"no {what}")
    lo, hi = wilson_interval(count, n, confidence)
    return ShareFigure(value=count / n, ci=[lo, hi], count=count, n=n)


def _corrected(rg: RoganGladen) -> CorrectedFigure:
    return CorrectedFigure(
        value=rg.value,
        ci=list(rg.ci) if rg.ci is not None else None,
        reason=rg.reason,
        apparent=rg.apparent,
        n_apparent=rg.n_apparent,
        sensitivity=rg.sensitivity,
        n_positive=rg.n_positive,
        specificity=rg.specificity,
        n_negative=rg.n_negative,
    )


class _Design:
    """The cases' strata in design order and, per case, its stratum's index."""

    def __init__(self, table: LabelTable) -> None:
        names = [c.stratum or ONE_STRATUM for c in table.cases]
        self.names = sorted(set(names), key=stratum_order)
        index = {name: i for i, name in enumerate(self.names)}
        self.code = np.array([index[n] for n in names], dtype=np.int64)
        self.recorded = any(c.stratum is not None for c in table.cases)


def _count(mask: np.ndarray) -> int:
    return int(np.count_nonzero(mask))


def _confusion(ref: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """Counts by (reference + 1, code + 2): row 0 no reference label, column 0 no label,
    column 1 an invalid label (or no majority), then the labels."""
    joint = (ref + 1) * (k + 2) + (codes + 2)
    return np.bincount(joint, minlength=(k + 1) * (k + 2)).reshape(k + 1, k + 2)


class _ScaleSet:
    """One scale on one set of cases: the cases used, labelled and in which pool, and
    the counts every figure is computed from."""

    def __init__(self, s: Scale, mask: np.ndarray, unresolved: np.ndarray, design: _Design) -> None:
        self.scale, self.mask, k = s, mask, s.k
        self.ref = s.ref[mask] if s.ref is not None else np.full(_count(mask), -1)
        winner = s.votes.winner[mask]
        used = (winner >= 0) & ~unresolved[mask]
        labelled = used & (self.ref >= 0)
        codes, n_strata = design.code[mask], len(design.names)
        n_h = np.bincount(codes[used], minlength=n_strata)
        l_h = np.bincount(codes[labelled], minlength=n_strata)
        present = [h for h in range(n_strata) if n_h[h]]
        pools = pool_strata([int(l_h[h]) for h in present])
        pool_of = np.full(n_strata, -1, dtype=np.int64)
        for p, members in enumerate(pools):
            pool_of[[present[i] for i in members]] = p
        # per pool, by (reference + 1, majority + 1), over the cases used
        side = k + 1
        joint = (pool_of[codes[used]] * side + self.ref[used] + 1) * side + winner[used] + 1
        self.joint = np.bincount(joint, minlength=len(pools) * side * side).reshape(
            len(pools), side, side
        )
        self.majority = _confusion(self.ref, winner, k)
        self.counts = ScaleShares(
            used=_count(used),
            labelled=_count(labelled),
            no_majority=_count(winner < 0),
            unresolved=_count((winner >= 0) & unresolved[mask]),
            strata={
                design.names[h]: StratumCount(cases=int(n_h[h]), labelled=int(l_h[h]))
                for h in present
            },
            pooled=[[design.names[present[i]] for i in pool] for pool in pools if len(pool) > 1],
            shares={},
        )

    def ppi(self, c: int, confidence: float) -> tuple[PpiFigure, float | None]:
        lab, unl = self.joint[:, 1:, :], self.joint[:, 0, :]
        n, n_u = int(lab.sum()), int(unl.sum())
        if n < MIN_LABELLED:
            why = f"fewer than {MIN_LABELLED} labelled cases with a decided majority ({n})"
            return PpiFigure(value=None, n=n, n_unlabelled=n_u, reason=why), None
        both = lab[:, c, c + 1]
        ref_only = lab[:, c, :].sum(axis=1) - both
        pred_only = lab[:, :, c + 1].sum(axis=1) - both
        neither = lab.sum(axis=(1, 2)) - both - ref_only - pred_only
        rows = zip(both, ref_only, pred_only, neither, unl[:, c + 1], unl.sum(axis=1), strict=True)
        samples = [
            StratumSample.of_indicators(
                str(p),
                both=int(b),
                reference_only=int(r),
                prediction_only=int(f),
                neither=int(x),
                unlabelled_positive=int(up),
                unlabelled=int(u),
            )
            for p, (b, r, f, x, up, u) in enumerate(rows)
        ]
        est = stratified_ppi(samples, confidence=confidence)
        alone = stratified_ppi(samples, lam=0.0, confidence=confidence)
        figure = PpiFigure(
            value=_clip(est.value),
            ci=[_clip(est.ci[0]), _clip(est.ci[1])],
            n=n,
            n_unlabelled=n_u,
            ci_unreliable=n < RELIABLE_PPI_N or int(lab[:, c, :].sum()) in (0, n),
        )
        return figure, effective_n(n, alone.variance, est.variance)

    @staticmethod
    def corrected(conf: np.ndarray, confidence: float) -> list[CorrectedFigure]:
        """Rogan-Gladen for each label from a rater's :func:`_confusion`."""
        judged = conf[1:, 2:]  # a reference label and a valid label
        n_pos, called_judged = judged.sum(axis=1).tolist(), judged.sum(axis=0).tolist()
        tps, n_judged = np.diagonal(judged).tolist(), int(judged.sum())
        called, n_q = conf[:, 2:].sum(axis=0).tolist(), int(conf[:, 2:].sum())
        out = []
        for c, tp in enumerate(tps):
            n_neg = n_judged - n_pos[c]
            tn = n_neg - (called_judged[c] - tp)
            out.append(
                _corrected(rogan_gladen(called[c], n_q, tp, n_pos[c], tn, n_neg, confidence))
            )
        return out

    def shares(self, raters: Sequence[str], confidence: float) -> ScaleShares:
        s, out, m = self.scale, {}, self.majority
        majority = self.corrected(m, confidence)
        each = {
            r: self.corrected(_confusion(self.ref, s.column(r)[self.mask], s.k), confidence)
            for r in raters
        }
        n_decided, by_ref = int(m[:, 2:].sum()), m[1:, :].sum(axis=1)
        for c, label in enumerate(s.cats):
            ppi, eff = self.ppi(c, confidence)
            out[label] = LabelShare(
                panel=_share(int(m[:, c + 2].sum()), n_decided, confidence, "decided case"),
                humans=_share(int(by_ref[c]), int(by_ref.sum()), confidence, "labelled case"),
                ppi=ppi,
                effective_n=eff,
                rogan_gladen=CorrectedShares(
                    majority=majority[c],
                    raters={r: figures[c] for r, figures in each.items()},
                ),
            )
        return self.counts.model_copy(update={"shares": out})


def _group(
    scales: Sequence[Scale],
    mask: np.ndarray,
    unresolved: np.ndarray,
    design: _Design,
    raters: Sequence[str],
    confidence: float,
) -> CalibratedGroup:
    parts = [_ScaleSet(s, mask, unresolved, design).shares(raters, confidence) for s in scales]
    return CalibratedGroup(
        cases=_count(mask), labels=parts[0], binary=parts[1] if len(parts) > 1 else None
    )


def calibrated_prevalence(
    table: LabelTable,
    scales: Sequence[Scale],
    ref: Reference | None,
    reason: str | None,
    raters: Sequence[str],
    confidence: float = CONFIDENCE,
) -> Calibrated:
    """The calibrated prevalence of a report (see the module): ``scales`` as the report
    has them, ``ref`` its reference (``None``: none, and ``reason`` why), ``raters``
    those compared against the reference (each gets its Rogan-Gladen figure)."""
    if ref is None or not ref.n_cases:
        why = reason or "the reference has no valid label on any case in scope"
        return Calibrated(available=False, reason=why)
    design = _Design(table)
    n = len(table.cases)
    unresolved = (
        ref.unresolved_cases if ref.unresolved_cases is not None else np.zeros(n, dtype=bool)
    )

    def group(mask: np.ndarray) -> CalibratedGroup:
        return _group(scales, mask, unresolved, design, raters, confidence)

    by: dict[str, dict[str, CalibratedGroup]] = {}
    for field in STRATA:
        names, codes = np.unique(
            np.array([getattr(c, field) or NO_VALUE for c in table.cases], dtype=str),
            return_inverse=True,
        )
        by[field] = {str(v): group(codes == i) for i, v in enumerate(names.tolist())}
    return Calibrated(
        available=True,
        assumption=ASSUMPTION,
        policy=POLICY,
        design=DESIGN if design.recorded else NO_DESIGN,
        confidence=confidence,
        overall=group(np.ones(n, dtype=bool)),
        by_dataset=by["dataset"],
        by_run=by["run"],
        by_category=by["category"],
    )
