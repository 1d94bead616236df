"""The report's comparisons: pairwise Cohen's kappa with percent agreement and base
rates, and each compared rater (and the majority) against the reference: kappa,
accuracy, confusion, Gwet's AC1, base rates and the constant-predictor baseline."""

from __future__ import annotations

import numpy as np

from tiap.agreement import beyond, reference_baselines
from tiap.agreement import formulas as st
from tiap.agreement import library as lib
from tiap.agreement.estimates import Estimate
from tiap.agreement.figure_model import Figure, figure_of, unreliable_ci
from tiap.agreement.models import (
    Comparison,
    PairBinary,
    PairKappa,
    ReferenceInfo,
    VsRater,
    VsReference,
)
from tiap.agreement.reference import Reference
from tiap.agreement.scale import Scale
from tiap.stats import wilson_interval

#: the majority's key among the compared raters' figures
MAJORITY_KEY = "\0majority"
_unreliable = unreliable_ci
_figure = figure_of


def _share_figure(e: Estimate, confusion: np.ndarray) -> Figure:
    """A share (accuracy: the confusion matrix's diagonal of its total) with its
    Wilson interval, whatever the resamples."""
    n, hits = int(confusion.sum()), int(np.trace(confusion))
    if e.value is None or not n:
        return Figure(value=e.value, n=e.n, reason=e.reason)
    return Figure(value=e.value, ci=list(wilson_interval(hits, n)), n=n, ci_method="wilson")


def pairs(scales: list[Scale], est: dict[str, Estimate], included: list[str]) -> list[PairKappa]:
    out = []
    lab = scales[0]
    for i in range(len(included)):
        for j in range(i + 1, len(included)):
            e = est[f"cohen.labels.{i}.{j}"]
            conf = st.confusion_matrix(lab.codes[:, i], lab.codes[:, j], lab.k)
            binary = None
            if len(scales) > 1:
                b, eb = scales[1], est[f"cohen.binary.{i}.{j}"]
                bconf = st.confusion_matrix(b.codes[:, i], b.codes[:, j], b.k)
                binary = PairBinary(
                    kappa=eb.value,
                    ci=list(eb.ci) if eb.ci else None,
                    reason=eb.reason,
                    agreement=_trace_share(bconf),
                    ci_unreliable=_unreliable(eb),
                    base_rates=beyond.pair_base_rates(bconf, b.cats),
                )
            out.append(
                PairKappa(
                    a=included[i],
                    b=included[j],
                    n=e.n,
                    kappa=e.value,
                    ci=list(e.ci) if e.ci else None,
                    reason=e.reason,
                    agreement=_trace_share(conf),
                    binary=binary,
                    ci_unreliable=_unreliable(e),
                    base_rates=beyond.pair_base_rates(conf, lab.cats),
                )
            )
    return out


def _trace_share(conf: np.ndarray) -> float | None:
    """Percent agreement of a pair (no library computes it: tiap's formula)."""
    n = conf.sum()
    return float(np.trace(conf) / n) if n else None


def _comparison(s: Scale, est: dict[str, Estimate], rater: str, codes: np.ndarray) -> Comparison:
    ref = s.ref if s.ref is not None else np.full(len(codes), -1)
    kappa = _figure(est[f"ref.kappa.{s.name}.{rater}"])
    confusion = lib.confusion_matrix(ref, codes, s.k)
    return Comparison(
        n=kappa.n,
        kappa=kappa,
        accuracy=_share_figure(est[f"ref.acc.{s.name}.{rater}"], confusion),
        confusion=confusion.tolist(),
        ac1=beyond.reference_ac1(est, s.name, rater),
        base_rates=beyond.reference_base_rates(confusion, s.cats),
        baseline=reference_baselines.baseline(s, est, rater, confusion)
        if s.ref is not None
        else None,
    )


def _vs_rater(scales: list[Scale], est: dict[str, Estimate], rater: str) -> VsRater:
    def codes(s: Scale) -> np.ndarray:
        return s.votes.winner if rater == MAJORITY_KEY else s.column(rater)

    return VsRater(
        rater="majority" if rater == MAJORITY_KEY else rater,
        labels=_comparison(scales[0], est, rater, codes(scales[0])),
        binary=_comparison(scales[1], est, rater, codes(scales[1])) if len(scales) > 1 else None,
    )


def vs_reference(
    scales: list[Scale],
    est: dict[str, Estimate],
    ref: Reference | None,
    reason: str | None,
    compared: list[str],
) -> VsReference:
    if ref is None:
        return VsReference(available=False, reason=reason)
    info = ReferenceInfo(
        policy=ref.policy, raters=ref.raters, n_cases=ref.n_cases, unresolved=ref.unresolved
    )
    if ref.n_cases == 0:
        return VsReference(
            available=False,
            reason=f"the reference ({ref.policy}) has no valid label on any case in scope",
            reference=info,
        )
    return VsReference(
        available=True,
        reference=info,
        raters=[_vs_rater(scales, est, r) for r in compared],
        majority=_vs_rater(scales, est, MAJORITY_KEY),
    )
