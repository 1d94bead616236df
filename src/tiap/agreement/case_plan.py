"""How many labelled cases the gate's figures need (:mod:`tiap.stats.sample_size`): for
each gate figure, at its observed estimate, the cases at which its 95% interval would be
a given width, and the cases at which its lower bound would clear its threshold.

- Each judge's Cohen's kappa against the human reference on a binary scale: the
  analytic per-case variance (Donner & Eliasziw 1992; Fleiss, Cohen & Everitt 1969)
  at the observed kappa and the pooled positive share of the two raters on the compared
  cases.
- Fleiss' kappa over the judges, and any kappa on more than two labels: the bootstrap
  variance of the report's resamples scaled by the cases it was drawn on.

Or by hand (``tiap agreement plan``): a kappa, a prevalence and a number of raters;
two raters take the analytic variance, more a seeded simulation of Fleiss' kappa.
"""

from __future__ import annotations

from tiap.agreement.beyond_models import PlanRow, SamplePlan, VarianceMethod
from tiap.agreement.estimates import Estimate
from tiap.agreement.models import Comparison, Gate, VsReference
from tiap.limits import check_interval_width, check_kappa, check_prevalence, check_raters
from tiap.stats import sample_size as ss
from tiap.stats.intervals import CONFIDENCE

#: the interval width a report plans for (``tiap agreement plan --width``)
DEFAULT_WIDTH = 0.2


def _bootstrap(e: Estimate | None) -> tuple[float | None, str | None]:
    if e is None or e.value is None:
        return None, (e.reason if e is not None else None) or "undefined"
    if e.sd is None:
        return None, "no bootstrap variance (--resamples 0, or too few resamples)"
    return e.n * e.sd * e.sd, None


def _plan_row(
    base: PlanRow,
    width: float,
    variance: float | None,
    method: VarianceMethod | None,
    reason: str | None,
) -> PlanRow:
    if variance is None or base.estimate is None:
        return base.model_copy(update={"reason": reason or base.reason or "undefined"})
    n_lower = ss.cases_for_lower_bound(variance, base.estimate, base.threshold)
    return base.model_copy(
        update={
            "variance": variance,
            "variance_method": method,
            "sd": ss.sd_at(variance, base.n) if base.n else None,
            "cases_for_width": ss.cases_for_width(variance, width),
            "cases_for_lower_bound": n_lower,
            "reason": None if n_lower is not None else "the estimate does not exceed the threshold",
        }
    )


def _positive_share(c: Comparison) -> float | None:
    """The pooled share of the first (positive) binary label in both raters' labels."""
    total = sum(map(sum, c.confusion))
    if not total:
        return None
    positive = sum(c.confusion[0]) + sum(row[0] for row in c.confusion)
    return positive / (2 * total)


def _judge_row(
    gate: Gate, judge: str, e: Estimate | None, c: Comparison | None, width: float
) -> PlanRow:
    f = gate.figures
    base = PlanRow(
        figure="judge_kappa",
        rater=judge,
        estimate=f.judge_kappa.get(judge),
        threshold=gate.min_judge_kappa,
        n=f.judge_n.get(judge, 0),
        raters=2,
    )
    if f.scale == "binary" and c is not None and base.estimate is not None:
        p = _positive_share(c)
        if p is not None and 0.0 < p < 1.0:
            v = ss.cohen_kappa_variance(base.estimate, p)
            return _plan_row(base.model_copy(update={"prevalence": p}), width, v, "analytic", None)
    variance, reason = _bootstrap(e)
    return _plan_row(base, width, variance, "bootstrap", reason)


def report_plan(
    gate: Gate,
    fleiss: Estimate | None,
    judge_estimates: dict[str, Estimate],
    comparisons: dict[str, Comparison],
    width: float = DEFAULT_WIDTH,
) -> SamplePlan:
    """The plan of a report's gate figures: the gate's Fleiss' kappa (over the judges,
    or the judges and the reference; bootstrap variance), and each judge's kappa against
    the reference (``comparisons``: on the gate's scale)."""
    w = check_interval_width("width", width)
    f = gate.figures
    rows = []
    if gate.judges:
        base = PlanRow(
            figure="fleiss_kappa",
            estimate=f.fleiss_kappa,
            threshold=gate.min_fleiss,
            n=f.fleiss_n,
            raters=len(gate.fleiss_raters or gate.judges),
        )
        variance, reason = _bootstrap(fleiss)
        rows.append(_plan_row(base, w, variance, "bootstrap", reason))
    for judge in f.judge_kappa:
        rows.append(_judge_row(gate, judge, judge_estimates.get(judge), comparisons.get(judge), w))
    return SamplePlan(width=w, confidence=CONFIDENCE, rows=rows)


def hand_plan(
    kappa: float,
    prevalence: float,
    raters: int = 2,
    *,
    width: float = DEFAULT_WIDTH,
    threshold: float,
    n: int = 0,
) -> SamplePlan:
    """A plan for a kappa given by hand: Cohen's (two raters, analytic variance) or
    Fleiss' (more, simulated). Every number is checked (one-line error)."""
    k = check_kappa("kappa", kappa)
    p = check_prevalence("prevalence", prevalence)
    m = check_raters("raters", raters)
    w = check_interval_width("width", width)
    t = check_kappa("threshold", threshold)
    base = PlanRow(
        figure="cohen_kappa" if m == 2 else "fleiss_kappa",
        estimate=k,
        threshold=t,
        n=n,
        raters=m,
        prevalence=p,
    )
    if m == 2:
        row = _plan_row(base, w, ss.cohen_kappa_variance(k, p), "analytic", None)
    elif k < 0:
        row = base.model_copy(update={"reason": "the simulation has no negative agreement"})
    else:
        row = _plan_row(base, w, ss.simulated_fleiss_variance(k, p, m), "simulated", None)
    return SamplePlan(width=w, confidence=CONFIDENCE, rows=[row])


def plan_of(
    gate: Gate, est: dict[str, Estimate], vs_ref: VsReference, width: float = DEFAULT_WIDTH
) -> SamplePlan:
    """:func:`report_plan` from a report's estimates, on the gate's scale."""
    scale = gate.figures.scale
    comparisons = {
        v.rater: (v.binary if scale == "binary" and v.binary is not None else v.labels)
        for v in vs_ref.raters
    }
    judges = {j: e for j in gate.figures.judge_kappa if (e := est.get(f"ref.kappa.{scale}.{j}"))}
    fleiss = "paper.fleiss_ref" if gate.gate_raters == "judges+reference" else "gate.fleiss"
    return report_plan(gate, est.get(f"{fleiss}.{scale}"), judges, comparisons, width)
