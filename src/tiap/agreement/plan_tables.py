"""The sample-size plan as report blocks (:mod:`tiap.agreement.case_plan`): a table of
each gate figure's cases needed, the same as grouped bars (cases now, for the interval
width, for the lower bound), and the lines ``tiap agreement plan`` prints."""

from __future__ import annotations

from tiap.agreement.beyond_models import PlanRow, SamplePlan
from tiap.report.blocks import Block, Figure, Figures, data, data_table, heading, para
from tiap.report.charts import Bar, grouped_bars
from tiap.report.numbers import MISSING, num

PLAN_NOTE = (
    "Planning rule: a kappa on n cases has a standard deviation close to sqrt(V / n), V its "
    "per-case variance (Cohen's kappa of two raters on a binary scale: the analytic "
    "variance of Donner & Eliasziw at the observed kappa and prevalence; otherwise the "
    "bootstrap variance times the cases). Its interval kappa +- z sqrt(V / n) is w wide at "
    "n = V (2 z / w)^2 cases and clears a threshold t < kappa at n = V z^2 / (kappa - t)^2."
)


def figure_name(row: PlanRow) -> str:
    """``Fleiss' kappa over the judges``, ``kappa of judge-a vs the reference``."""
    if row.figure == "fleiss_kappa":
        return "Fleiss' kappa" + (" over the judges" if row.rater is None else "")
    if row.figure == "judge_kappa":
        return f"kappa of {row.rater} vs the reference"
    return "Cohen's kappa"


def _cases(value: int | None, row: PlanRow) -> str:
    if value is not None:
        return str(value)
    return f"{MISSING} ({row.reason})" if row.reason else MISSING


def plan_table(plan: SamplePlan) -> tuple[list[str], list[list[object]]]:
    header = [
        "figure",
        "estimate",
        "threshold",
        "cases",
        "per-case variance",
        "SD at these cases",
        f"cases for a {num(plan.width)}-wide interval",
        "cases for the lower bound to clear the threshold",
    ]
    rows: list[list[object]] = []
    for r in plan.rows:
        method = f" ({r.variance_method})" if r.variance_method else ""
        rows.append(
            [
                figure_name(r),
                num(r.estimate),
                num(r.threshold),
                r.n,
                f"{num(r.variance)}{method}" if r.variance is not None else _cases(None, r),
                num(r.sd),
                _cases(r.cases_for_width, r),
                _cases(r.cases_for_lower_bound, r),
            ]
        )
    return header, rows


def plan_figure(plan: SamplePlan) -> Figure | None:
    """Cases now, for the width, and for the lower bound, per gate figure."""
    groups = [figure_name(r) for r in plan.rows]
    series = ["cases now", f"for a {num(plan.width)}-wide interval", "for the lower bound"]
    bars = [
        [
            Bar(float(r.n), f"{figure_name(r)}: {r.n} cases now"),
            Bar(
                None if r.cases_for_width is None else float(r.cases_for_width),
                f"{figure_name(r)}: {_cases(r.cases_for_width, r)} for the width",
            ),
            Bar(
                None if r.cases_for_lower_bound is None else float(r.cases_for_lower_bound),
                f"{figure_name(r)}: {_cases(r.cases_for_lower_bound, r)} for the lower bound",
            ),
        ]
        for r in plan.rows
    ]
    svg = grouped_bars(groups, series, bars, "cases", "Cases the gate's figures need")
    return Figure(svg, "Cases each gate figure has and needs") if svg else None


def blocks(plan: SamplePlan | None, *, html: bool) -> list[Block]:
    """The report's section (nothing without a plan or gate figures)."""
    if plan is None or not plan.rows:
        return []
    out: list[Block] = [
        heading(2, "How many cases the gate needs"),
        para(data(PLAN_NOTE)),
        data_table(*plan_table(plan)),
    ]
    if html and (figure := plan_figure(plan)) is not None:
        out.append(Figures([figure]))
    return out


def lines(plan: SamplePlan) -> list[str]:
    """``tiap agreement plan``'s output, one line per figure."""
    out = []
    for r in plan.rows:
        head = f"{figure_name(r)} {num(r.estimate)}"
        if r.prevalence is not None:
            head += f", prevalence {num(r.prevalence)}"
        if r.figure != "judge_kappa":
            head += f", {r.raters} raters"
        if r.variance is None:
            out.append(f"{head}: {r.reason or 'no variance'}")
            continue
        out.append(
            f"{head}: per-case variance {num(r.variance)} ({r.variance_method}); "
            f"{_cases(r.cases_for_width, r)} cases for a {num(plan.width)}-wide "
            f"{round(100 * plan.confidence)}% interval; {_cases(r.cases_for_lower_bound, r)} "
            f"cases for its lower bound to clear {num(r.threshold)}"
        )
    return out
