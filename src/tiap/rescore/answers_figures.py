"""Figures of the answer-level analysis (:mod:`tiap.rescore.answer_analysis`): each target's
score against answer F1 (correlations with their intervals) and the mean answer F1 of
the hit groups, drawn with :mod:`tiap.report`'s interval rows."""

from __future__ import annotations

from tiap.report.blocks import Figure
from tiap.report.charts import IntervalRow, interval_rows
from tiap.report.numbers import signed
from tiap.report.palette import series_color
from tiap.rescore.report_models import RescoreReport
from tiap.rescore.sections_answers import GROUP_LABELS


def correlation_plot(report: RescoreReport) -> Figure | None:
    """Per run and target: Pearson r between the per-query target score and answer F1."""
    answers = report.answers
    if answers is None:
        return None
    targets = report.parameters.targets
    rows = []
    for run, r in answers.runs.items():
        for i, target in enumerate(targets):
            c = r.correlations.get(target)
            if c is None or c.pearson is None:
                continue
            tip = f"{run}, {target}: n={c.n}, Spearman {signed(c.spearman)}"
            color = series_color(i)
            rows.append(
                IntervalRow(
                    f"{run} · {target}", c.pearson, c.pearson_ci_low, c.pearson_ci_high, color, tip
                )
            )
    title = f"Target score ({answers.measure}) vs answer F1: Pearson r per run and target"
    legend = [(t, series_color(i)) for i, t in enumerate(targets)]
    body = interval_rows(rows, f"Pearson r ({answers.measure}, answer F1)", title, legend)
    return Figure(body, title) if body else None


def hit_group_plot(report: RescoreReport) -> Figure | None:
    """Per run: the mean answer F1 of the queries hit by Raw only, Canonical only, both,
    neither."""
    answers = report.answers
    if answers is None:
        return None
    rows = []
    for run, r in answers.runs.items():
        for i, (group, label) in enumerate(GROUP_LABELS.items()):
            m = r.hits.get(group)
            if m is None or m.mean is None:
                continue
            tip = f"{run}, {label}: n={m.n}"
            color = series_color(i)
            rows.append(IntervalRow(f"{run} · {label}", m.mean, m.ci_low, m.ci_high, color, tip))
    title = f"Mean answer F1 by the target hit ({answers.hit_measure})"
    legend = [(label, series_color(i)) for i, label in enumerate(GROUP_LABELS.values())]
    body = interval_rows(rows, "mean answer F1", title, legend, sign=False)
    return Figure(body, title) if body else None


def answer_figures(report: RescoreReport) -> list[Figure]:
    return [f for f in (correlation_plot(report), hit_group_plot(report)) if f is not None]
