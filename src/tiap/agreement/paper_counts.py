"""Agreement figures counted as the paper counts them, beside tiap's own.

- **Plurality vote** (Table 6's majority shares, which add up to 100% of all cases):
  per case, the label most of the voters' valid labels name; a tie between the
  most-named labels goes to the one listed last in the rubric (the one that gives the
  credit least: ``does_not_support`` over ``partial`` over ``supports``); a case without
  a valid label is ``no_valid_label``. tiap's own majority (:mod:`tiap.agreement.votes`)
  needs a strict majority and a quorum, and reports its shares among decided cases.
- **Percent agreement on complete cases** (Table 14: over the cases where every judge
  gave a valid label): the mean pairwise agreement of the included raters on those
  cases only, beside tiap's pairwise-deletion figure (each pair on the cases both
  labelled validly).
- **Fleiss' kappa over the judges and the reference** (the paper's validation kappa
  over five raters: the human and four LLMs), whenever human labels are the reference,
  beside the same kappa over the judges alone; the gate's kappa is over the judges alone
  unless ``--gate-raters judges+reference`` asks for the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tiap.agreement import formulas as st
from tiap.agreement.estimates import Estimate
from tiap.agreement.label_table import ABSENT
from tiap.agreement.paper_models import (
    CompleteCaseAgreement,
    PaperCounts,
    PluralityVote,
    ReferenceFleiss,
)
from tiap.agreement.scale import Scale

NO_VALID_LABEL = "no_valid_label"
POLICY = (
    "plurality: the label most of the voters' valid labels name, over all cases "
    "(invalid and missing labels are abstentions; no quorum)"
)
TIE_RULE = (
    "a tie between the most-named labels goes to the label listed last in the rubric "
    "(the one that gives the credit least)"
)


def plurality(scale: Scale) -> PluralityVote:
    """The plurality vote of ``scale``'s voters (their counts per case)."""
    counts = scale.votes.counts
    n = counts.shape[0]
    top = counts.max(axis=1) if scale.k else np.zeros(n)
    at_top = (counts == top[:, None]) & (top[:, None] > 0)
    # the last label at the top count: argmax over the reversed columns
    last = scale.k - 1 - np.argmax(at_top[:, ::-1], axis=1) if scale.k else np.zeros(n, int)
    winner = np.where(top > 0, last, -1)
    tallies = {c: int((winner == i).sum()) for i, c in enumerate(scale.cats)}
    tallies[NO_VALID_LABEL] = int((winner < 0).sum())
    return PluralityVote(
        policy=POLICY,
        tie_rule=TIE_RULE,
        n_cases=n,
        n_ties_broken=int((at_top.sum(axis=1) > 1).sum()),
        counts=tallies,
        shares={c: (v / n if n else None) for c, v in tallies.items()},
    )


def _complete_only(codes: np.ndarray) -> np.ndarray:
    """``codes`` with every case where some rater has no valid label blanked out."""
    complete = np.asarray((codes >= 0).all(axis=1), dtype=bool)
    if not codes.shape[1]:
        complete = np.zeros(len(codes), dtype=bool)
    return np.where(complete[:, None], codes, ABSENT)


def reference_raters(judges: Sequence[str], reference: Sequence[str]) -> list[str]:
    """The raters of the five-rater kappa: the judges, then the reference's raters."""
    return [*judges, *(r for r in reference if r not in judges)]


def stats(
    scales: Sequence[Scale], judges: Sequence[str], reference: Sequence[str] | None
) -> dict[str, st.Stat]:
    """The bootstrapped figures, keyed ``paper.*``, to evaluate with the report's."""
    out: dict[str, st.Stat] = {}
    raters = reference_raters(judges, reference) if reference and judges else None
    for s in scales:
        out[f"paper.pa_complete.{s.name}"] = st.mean_pairwise_agreement_stat(
            _complete_only(s.codes), s.k
        )
        if raters is not None:
            idx = [s.names.index(r) for r in raters]
            out[f"paper.fleiss_ref.{s.name}"] = st.fleiss_stat(s.codes_all[:, idx], s.k)
    return out


def _ci(e: Estimate) -> list[float] | None:
    return list(e.ci) if e.ci else None


def counts(
    scales: Sequence[Scale],
    est: Mapping[str, Estimate],
    judges: Sequence[str],
    reference: Sequence[str] | None,
) -> PaperCounts:
    """The paper-compatible rows, from the estimates of :func:`stats`."""
    complete: dict[str, CompleteCaseAgreement] = {}
    for s in scales:
        e = est[f"paper.pa_complete.{s.name}"]
        complete[s.name] = CompleteCaseAgreement(
            value=e.value, ci=_ci(e), n=e.n, n_cases=len(s.codes), reason=e.reason
        )
    with_ref = alone = None
    if reference and judges:
        raters = reference_raters(judges, reference)
        with_ref = {s.name: _fleiss(est[f"paper.fleiss_ref.{s.name}"], raters) for s in scales}
        alone = {s.name: _fleiss(est[f"gate.fleiss.{s.name}"], list(judges)) for s in scales}
    return PaperCounts(
        plurality={s.name: plurality(s) for s in scales},
        complete_case_agreement=complete,
        fleiss_judges_and_reference=with_ref,
        fleiss_judges=alone,
    )


def _fleiss(e: Estimate, raters: list[str]) -> ReferenceFleiss:
    return ReferenceFleiss(raters=raters, value=e.value, ci=_ci(e), n=e.n, reason=e.reason)
