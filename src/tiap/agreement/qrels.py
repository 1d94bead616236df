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

Intervals are 95% percentile bootstraps over cases with the report's draws (the
same resamples and seed as every other interval of the report).

Verdict per dataset (``RULE``): the **precision** check passes when the confirmed
share's lower bound is at least ``min_confirmed`` (0.9), fails when its upper
bound is below it, else is inconclusive; the **missed** check passes when the
negatives' found-relevant share's upper bound is at most ``max_missed`` (0.1),
fails when its lower bound is above it. Without intervals (0 resamples) the
point value is both bounds. ``labels unreliable`` when precision fails;
``missing labels`` when the missed check fails; ``labels reliable`` when
precision passes and the missed check passes or has no negatives; ``no data``
when neither check has a decided pair; else ``inconclusive``. The verdict is on
the panel majority; the human figures are the spot check beside it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import numpy as np

from tiap.agreement import library as lib
from tiap.agreement import stats as st
from tiap.agreement.bootstrap import Estimate, evaluate
from tiap.agreement.qrels_models import (
    Check,
    PanelVsReference,
    QrelsFigures,
    QrelsGroup,
    Rate,
    Share,
    Verdict,
)
from tiap.agreement.table import LabelTable
from tiap.errors import TiapError

DEFAULT_MIN_CONFIRMED = 0.90
DEFAULT_MAX_MISSED = 0.10
QRELS_KIND = "qrels"

RULE = (
    "precision: pass when the confirmed share's 95% CI lower bound >= min_confirmed, fail "
    "when its upper bound < min_confirmed; missed: pass when the negatives' found-relevant "
    "upper bound <= max_missed, fail when its lower bound > max_missed (without intervals the "
    "point value is both bounds); verdict: 'labels unreliable' if precision fails, else "
    "'missing labels' if missed fails, 'labels reliable' if precision passes and missed "
    "passes or has no negatives, 'no data' if neither has a decided pair, else "
    "'inconclusive'; on the panel majority"
)


def check_share_threshold(name: str, value: float) -> float:
    """A threshold on a share: a finite number in [0, 1] (one-line error otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TiapError(f"{name} must be a number in [0, 1] (got {value!r})")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise TiapError(f"{name} must be a finite number in [0, 1] (got {value!r})")
    return float(value)


def _share_stat(positive: np.ndarray, decided: np.ndarray) -> st.Stat:
    feats = np.column_stack([positive & decided, decided]).astype(np.float64)

    def finish(s: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(s[:, 1] > 0, s[:, 0] / np.where(s[:, 1] > 0, s[:, 1], 1), np.nan)

    def explain(s: np.ndarray) -> str | None:
        return "no pair with a decided label" if s[1] <= 0 else None

    return st.Stat(feats, finish, explain, int(decided.sum()))


def _share(e: Estimate, cases: int, relevant: int) -> Share:
    return Share(
        cases=cases,
        n=e.n,
        relevant=relevant,
        value=e.value,
        ci=list(e.ci) if e.ci else None,
        reason=e.reason,
    )


def _rate(e: Estimate) -> Rate:
    return Rate(value=e.value, ci=list(e.ci) if e.ci else None, n=e.n, reason=e.reason)


def _bounds(s: Share) -> tuple[float, float] | None:
    if s.value is None:
        return None
    return (s.ci[0], s.ci[1]) if s.ci else (s.value, s.value)


def _precision(s: Share, min_confirmed: float) -> Check:
    b = _bounds(s)
    if b is None:
        return "no data"
    if b[0] >= min_confirmed:
        return "pass"
    return "fail" if b[1] < min_confirmed else "inconclusive"


def _missed(s: Share, max_missed: float) -> Check:
    b = _bounds(s)
    if b is None:
        return "no data"
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


def _reasons(g: QrelsGroup, min_confirmed: float, max_missed: float) -> list[str]:
    def shown(s: Share) -> str:
        if s.value is None:
            return "n/a"
        ci = f" [{s.ci[0]:.3f}, {s.ci[1]:.3f}]" if s.ci else ""
        return f"{s.value:.3f}{ci} ({s.relevant}/{s.n})"

    out = []
    confirmed = {
        "pass": f"at least {min_confirmed:.2f}",
        "fail": f"below {min_confirmed:.2f}",
        "inconclusive": f"not clearly above or below {min_confirmed:.2f}",
        "no data": "not measured (no decided annotated-relevant pair)",
    }[g.precision]
    out.append(f"confirmed share {shown(g.confirmed)}: {confirmed}")
    if g.negatives:
        missed = {
            "pass": f"at most {max_missed:.2f}",
            "fail": f"above {max_missed:.2f}",
            "inconclusive": f"not clearly above or below {max_missed:.2f}",
            "no data": "not measured (no decided negative)",
        }[g.missed]
        out.append(f"negatives found relevant {shown(g.negatives_found_relevant)}: {missed}")
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


def qrels_figures(
    table: LabelTable,
    winner: np.ndarray,
    reference: np.ndarray | None,
    positive: int,
    positive_label: str,
    weights: np.ndarray | None,
    *,
    min_confirmed: float = DEFAULT_MIN_CONFIRMED,
    max_missed: float = DEFAULT_MAX_MISSED,
) -> QrelsFigures | None:
    """The qrels figures (see the module doc), or ``None`` without qrels cases.

    ``winner``: the binary majority per case (-1 without one); ``reference``: the
    binary reference per case (-1 without one) or ``None``; ``positive``: the
    index of the relevant label on that scale; ``weights``: the report's bootstrap
    draws (``None``: no intervals)."""
    check_share_threshold("min_confirmed", min_confirmed)
    check_share_threshold("max_missed", max_missed)
    g = _Groups(table)
    if not g.qrels.any():
        return None
    decided = winner >= 0
    says_relevant = winner == positive
    ref_decided = reference >= 0 if reference is not None else None
    ref_relevant = reference == positive if reference is not None else None
    scopes = {"\0overall": g.qrels, **g.datasets}
    stats: dict[str, st.Stat] = {}
    for key, scope in scopes.items():
        groups = {"confirmed": g.relevant, "graded0": g.not_relevant, "negatives": g.negative}
        for name, mask in groups.items():
            m = mask & scope
            stats[f"{key}.panel.{name}"] = _share_stat(says_relevant & m, decided & m)
            if ref_decided is not None and ref_relevant is not None:
                stats[f"{key}.ref.{name}"] = _share_stat(ref_relevant & m, ref_decided & m)
        if reference is not None:
            a = np.where(scope, reference, -1)
            b = np.where(scope, winner, -1)
            stats[f"{key}.vs.agreement"] = st.agreement_stat(a, b, 2)
            stats[f"{key}.vs.kappa"] = replace(
                st.cohen_stat(a, b, 2), point=partial(lib.cohen_kappa, a, b, 2)
            )
    est = evaluate(stats, weights)
    has_ref = reference is not None and bool((reference >= 0)[g.qrels].any())

    def group(key: str, scope: np.ndarray) -> QrelsGroup:
        def share(who: str, name: str, mask: np.ndarray, hits: np.ndarray) -> Share:
            m = mask & scope
            return _share(est[f"{key}.{who}.{name}"], int(m.sum()), int((hits & m).sum()))

        ref_hits = None
        if ref_relevant is not None and ref_decided is not None:
            ref_hits = ref_relevant & ref_decided
        confirmed = share("panel", "confirmed", g.relevant, says_relevant & decided)
        negatives = share("panel", "negatives", g.negative, says_relevant & decided)
        precision = _precision(confirmed, min_confirmed)
        missed = _missed(negatives, max_missed) if (g.negative & scope).any() else "no data"
        vs = None
        if has_ref:
            vs = PanelVsReference(
                n=est[f"{key}.vs.agreement"].n,
                agreement=_rate(est[f"{key}.vs.agreement"]),
                kappa=_rate(est[f"{key}.vs.kappa"]),
            )
        out = QrelsGroup(
            cases=int(scope.sum()),
            annotated_relevant=int((g.relevant & scope).sum()),
            annotated_not_relevant=int((g.not_relevant & scope).sum()),
            negatives=int((g.negative & scope).sum()),
            confirmed=confirmed,
            confirmed_by_reference=(
                share("ref", "confirmed", g.relevant, ref_hits)
                if has_ref and ref_hits is not None
                else None
            ),
            graded_not_relevant_found_relevant=share(
                "panel", "graded0", g.not_relevant, says_relevant & decided
            ),
            negatives_found_relevant=negatives,
            negatives_found_relevant_by_reference=(
                share("ref", "negatives", g.negative, ref_hits)
                if has_ref and ref_hits is not None
                else None
            ),
            panel_vs_reference=vs,
            precision=precision,
            missed=missed,
            verdict=_verdict(precision, missed),
            reasons=[],
        )
        return out.model_copy(update={"reasons": _reasons(out, min_confirmed, max_missed)})

    return QrelsFigures(
        positive_label=positive_label,
        min_confirmed=min_confirmed,
        max_missed=max_missed,
        rule=RULE,
        overall=group("\0overall", g.qrels),
        by_dataset={name: group(name, scope) for name, scope in g.datasets.items()},
    )
