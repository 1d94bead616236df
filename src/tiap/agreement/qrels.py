"""Relevance-label audit figures for reports on ``qrels`` cases (the LMEB procedure).

On the binary scale of the report's rubric (``relevant`` is its positive label),
per dataset and over every pair:

- **confirmed**: of the annotated-relevant pairs (qrels grade > 0), the share the
  panel majority labels relevant, among those with a majority; and the same by
  the human reference (where people labelled);
- **negatives found relevant**: of the sampled documents without a positive grade
  (the run's top-ranked unjudged documents), the share the majority labels
  relevant: the rate of missed relevant documents (and by the reference);
- graded-not-relevant pairs (a qrels line with grade <= 0) found relevant;
- the panel majority against the human reference (percent agreement, Cohen's
  kappa, on the pairs with both).

The shares' intervals (and the percent agreement's) are 95% Wilson score
intervals (:mod:`tiap.stats.intervals`), honest at small n and given whatever the
resamples; the kappa's is the report's percentile bootstrap (the same draws as
every other bootstrap interval of the report), marked unreliable below 30 pairs.

Verdict per dataset (``RULE``): a check rests on enough pairs only when at least
``min_decided`` (0.8) of its pairs have a decided label (a panel majority);
otherwise it is inconclusive, with the reason. The **precision** check passes
when the confirmed share's lower bound is at least ``min_confirmed`` (0.9), fails
when its upper bound is below it, else is inconclusive; the **missed** check
passes when the negatives' found-relevant share's upper bound is at most
``max_missed`` (0.1), fails when its lower bound is above it. ``labels
unreliable`` when precision fails;
``missing labels`` when the missed check fails; ``labels reliable`` when
precision passes and the missed check passes or has no negatives; ``no data``
when neither check has a decided pair; else ``inconclusive``. The verdict is on
the panel majority; the human figures are the spot check beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial

import numpy as np

from tiap.agreement import formulas as st
from tiap.agreement import library as lib
from tiap.agreement.estimates import Estimate
from tiap.agreement.label_table import LabelTable
from tiap.agreement.qrels_models import (
    Check,
    PanelVsReference,
    QrelsFigures,
    QrelsGroup,
    Rate,
    Share,
    Verdict,
)
from tiap.limits import check_share_threshold
from tiap.stats import percentile_reliable, wilson_interval

__all__ = [
    "DEFAULT_MAX_MISSED",
    "DEFAULT_MIN_CONFIRMED",
    "DEFAULT_MIN_DECIDED",
    "QRELS_KIND",
    "RULE",
    "qrels_figures",
    "qrels_stats",
]

DEFAULT_MIN_CONFIRMED = 0.90
DEFAULT_MAX_MISSED = 0.10
DEFAULT_MIN_DECIDED = 0.80
QRELS_KIND = "qrels"
#: the names of the qrels kappas among a report's stats: this, then the scope
STAT_PREFIX = "qrels."
OVERALL = "\0overall"
NO_DECIDED = "no pair with a decided label"

RULE = (
    "a check with a decided label on fewer than min_decided of its pairs is inconclusive; "
    "precision: pass when the confirmed share's 95% Wilson CI lower bound >= min_confirmed, "
    "fail when its upper bound < min_confirmed; missed: pass when the negatives' "
    "found-relevant upper bound <= max_missed, fail when its lower bound > max_missed; "
    "verdict: 'labels unreliable' if precision fails, else 'missing labels' if missed fails, "
    "'labels reliable' if precision passes and missed passes or has no negatives, 'no data' "
    "if neither has a decided pair, else 'inconclusive'; on the panel majority"
)


def _share(hits: np.ndarray, decided: np.ndarray, group: np.ndarray) -> Share:
    """``hits`` of the ``group``'s pairs with a decided label, with its Wilson interval."""
    n, relevant = int((decided & group).sum()), int((hits & decided & group).sum())
    if not n:
        return Share(cases=int(group.sum()), n=0, relevant=0, value=None, reason=NO_DECIDED)
    return Share(
        cases=int(group.sum()),
        n=n,
        relevant=relevant,
        value=relevant / n,
        ci=list(wilson_interval(relevant, n)),
        ci_method="wilson",
    )


def _agreement(a: np.ndarray, b: np.ndarray) -> Rate:
    """Percent agreement of two label vectors on the pairs with both, Wilson interval."""
    both = (a >= 0) & (b >= 0)
    n, same = int(both.sum()), int((both & (a == b)).sum())
    if not n:
        return Rate(value=None, n=0, reason="no pair with both labels")
    return Rate(value=same / n, ci=list(wilson_interval(same, n)), n=n, ci_method="wilson")


def _rate(e: Estimate) -> Rate:
    return Rate(
        value=e.value,
        ci=list(e.ci) if e.ci else None,
        n=e.n,
        reason=e.reason,
        ci_method="percentile" if e.ci else None,
        ci_unreliable=e.ci is not None and not percentile_reliable(e.n),
    )


def _bounds(s: Share) -> tuple[float, float] | None:
    if s.value is None:
        return None
    return (s.ci[0], s.ci[1]) if s.ci else (s.value, s.value)


def _thin(s: Share, min_decided: float) -> bool:
    """Too few of the group's pairs have a decided label for a check to rest on."""
    return s.cases > 0 and s.n / s.cases < min_decided


def _precision(s: Share, min_confirmed: float, min_decided: float) -> Check:
    b = _bounds(s)
    if b is None:
        return "no data"
    if _thin(s, min_decided):
        return "inconclusive"
    if b[0] >= min_confirmed:
        return "pass"
    return "fail" if b[1] < min_confirmed else "inconclusive"


def _missed(s: Share, max_missed: float, min_decided: float) -> Check:
    b = _bounds(s)
    if b is None:
        return "no data"
    if _thin(s, min_decided):
        return "inconclusive"
    if b[1] <= max_missed:
        return "pass"
    return "fail" if b[0] > max_missed else "inconclusive"


def _verdict(precision: Check, missed: Check) -> Verdict:
    if precision == "fail":
        return "labels unreliable"
    if missed == "fail":
        return "missing labels"
    if precision == "pass" and missed in ("pass", "no data"):
        return "labels reliable"
    if precision == "no data" and missed == "no data":
        return "no data"
    return "inconclusive"


def _reasons(
    g: QrelsGroup, min_confirmed: float, max_missed: float, min_decided: float
) -> list[str]:
    def shown(s: Share) -> str:
        if s.value is None:
            return "n/a"
        ci = f" [{s.ci[0]:.3f}, {s.ci[1]:.3f}]" if s.ci else ""
        return f"{s.value:.3f}{ci} ({s.relevant}/{s.n})"

    def thin(s: Share, pairs: str) -> str:
        return (
            f"only {s.n} of {s.cases} {pairs} have a decided label ({s.n / s.cases:.3f} < "
            f"{min_decided:.2f}, --min-decided): inconclusive"
        )

    out = []
    if g.precision == "inconclusive" and _thin(g.confirmed, min_decided):
        confirmed = thin(g.confirmed, "annotated-relevant pair(s)")
    else:
        confirmed = {
            "pass": f"at least {min_confirmed:.2f}",
            "fail": f"below {min_confirmed:.2f}",
            "inconclusive": f"not clearly above or below {min_confirmed:.2f}",
            "no data": "not measured (no decided annotated-relevant pair)",
        }[g.precision]
    out.append(f"confirmed share {shown(g.confirmed)}: {confirmed}")
    if g.negatives:
        found = g.negatives_found_relevant
        if g.missed == "inconclusive" and _thin(found, min_decided):
            missed = thin(found, "sampled negative(s)")
        else:
            missed = {
                "pass": f"at most {max_missed:.2f}",
                "fail": f"above {max_missed:.2f}",
                "inconclusive": f"not clearly above or below {max_missed:.2f}",
                "no data": "not measured (no decided negative)",
            }[g.missed]
        out.append(f"negatives found relevant {shown(found)}: {missed}")
    else:
        out.append("no sampled negatives: missed labels not measured")
    return out


class _Groups:
    """Masks of the cases in scope: qrels pairs, by how they were drawn and by dataset."""

    def __init__(self, table: LabelTable) -> None:
        cases = table.cases
        self.qrels = np.array([c.kind == QRELS_KIND for c in cases], dtype=bool)
        annotated = np.array([c.pair == "annotated" for c in cases], dtype=bool) & self.qrels
        grade_pos = np.array([c.grade is not None and c.grade > 0 for c in cases], dtype=bool)
        self.relevant = annotated & grade_pos
        self.not_relevant = annotated & ~grade_pos
        self.negative = np.array([c.pair == "negative" for c in cases], dtype=bool) & self.qrels
        names = np.array([c.dataset or "(none)" for c in cases], dtype=object)
        self.datasets = {
            str(d): (names == d) & self.qrels for d in sorted(set(names[self.qrels].tolist()))
        }


def qrels_stats(
    table: LabelTable, winner: np.ndarray, reference: np.ndarray | None
) -> dict[str, st.Stat]:
    """The kappas of the panel majority against the reference, overall and per
    dataset, as stats for the report's one bootstrap pass (named
    :data:`STAT_PREFIX` + scope); none without qrels cases or a reference.
    ``winner`` and ``reference``: as :func:`qrels_figures` takes them."""
    g = _Groups(table)
    if reference is None or not g.qrels.any():
        return {}
    kappas: dict[str, st.Stat] = {}
    for key, scope in {OVERALL: g.qrels, **g.datasets}.items():
        a, b = np.where(scope, reference, -1), np.where(scope, winner, -1)
        kappas[STAT_PREFIX + key] = replace(
            st.cohen_stat(a, b, 2), point=partial(lib.cohen_kappa, a, b, 2)
        )
    return kappas


def qrels_figures(
    table: LabelTable,
    winner: np.ndarray,
    reference: np.ndarray | None,
    positive: int,
    positive_label: str,
    estimates: Mapping[str, Estimate],
    *,
    min_confirmed: float = DEFAULT_MIN_CONFIRMED,
    max_missed: float = DEFAULT_MAX_MISSED,
    min_decided: float = DEFAULT_MIN_DECIDED,
) -> QrelsFigures | None:
    """The qrels figures (see the module doc), or ``None`` without qrels cases.

    ``winner``: the binary majority per case (-1 without one); ``reference``: the
    binary reference per case (-1 without one) or ``None``; ``positive``: the
    index of the relevant label on that scale; ``estimates``: the report's
    estimates, with those of :func:`qrels_stats` (its bootstrap draws give the
    kappas' intervals)."""
    check_share_threshold("min_confirmed", min_confirmed)
    check_share_threshold("max_missed", max_missed)
    check_share_threshold("min_decided", min_decided)
    g = _Groups(table)
    if not g.qrels.any():
        return None
    decided = winner >= 0
    says_relevant = (winner == positive) & decided
    has_ref = reference is not None and bool((reference >= 0)[g.qrels].any())
    limits = (min_confirmed, max_missed, min_decided)

    def group(key: str, scope: np.ndarray) -> QrelsGroup:
        confirmed = _share(says_relevant, decided, g.relevant & scope)
        negatives = _share(says_relevant, decided, g.negative & scope)
        precision = _precision(confirmed, min_confirmed, min_decided)
        missed = (
            _missed(negatives, max_missed, min_decided) if (g.negative & scope).any() else "no data"
        )
        by_ref: dict[str, Share | None] = {"confirmed": None, "negatives": None}
        vs = None
        if has_ref and reference is not None:
            ref_decided = reference >= 0
            ref_hits = (reference == positive) & ref_decided
            by_ref = {
                "confirmed": _share(ref_hits, ref_decided, g.relevant & scope),
                "negatives": _share(ref_hits, ref_decided, g.negative & scope),
            }
            agreement = _agreement(np.where(scope, reference, -1), np.where(scope, winner, -1))
            kappa = _rate(estimates[STAT_PREFIX + key])
            vs = PanelVsReference(n=agreement.n, agreement=agreement, kappa=kappa)
        out = QrelsGroup(
            cases=int(scope.sum()),
            annotated_relevant=int((g.relevant & scope).sum()),
            annotated_not_relevant=int((g.not_relevant & scope).sum()),
            negatives=int((g.negative & scope).sum()),
            confirmed=confirmed,
            confirmed_by_reference=by_ref["confirmed"],
            graded_not_relevant_found_relevant=_share(
                says_relevant, decided, g.not_relevant & scope
            ),
            negatives_found_relevant=negatives,
            negatives_found_relevant_by_reference=by_ref["negatives"],
            panel_vs_reference=vs,
            precision=precision,
            missed=missed,
            verdict=_verdict(precision, missed),
            reasons=[],
        )
        return out.model_copy(update={"reasons": _reasons(out, *limits)})

    return QrelsFigures(
        positive_label=positive_label,
        min_confirmed=min_confirmed,
        max_missed=max_missed,
        min_decided=min_decided,
        rule=RULE,
        overall=group(OVERALL, g.qrels),
        by_dataset={name: group(name, scope) for name, scope in g.datasets.items()},
    )
