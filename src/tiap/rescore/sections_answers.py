"""``report.md`` section of the answer-level analysis (the paper's Section 5.5 and
Appendix E; figures in :mod:`tiap.rescore.answers_figures`). A report whose runs
carry no answers has no such section."""

from __future__ import annotations

from tiap.report.blocks import Block, Bullets, Cell, Data, data, heading, joined, para, table
from tiap.report.numbers import MISSING, bounds, num, pct, signed
from tiap.rescore.answer_models import AnswerCorrelation, AnswerGap, Answers, MeanF1
from tiap.rescore.report_models import RescoreReport
from tiap.rescore.report_text import pct_label

#: the hit groups as the report names them
GROUP_LABELS = {
    "raw_only": "Raw only",
    "canonical_only": "Canonical only",
    "both": "both",
    "neither": "neither",
}


def mean_ci(m: MeanF1) -> str:
    if m.mean is None:
        return MISSING
    if m.ci_low is None:
        return num(m.mean)
    return f"{num(m.mean)} {bounds(m.ci_low, m.ci_high)}"


def _r(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return MISSING
    return f"{signed(value)} {bounds(low, high, sign=True)}" if low is not None else signed(value)


def _correlations(answers: Answers, level: str) -> list[Block]:
    rows: list[list[Cell]] = []
    for run, r in answers.runs.items():
        for target, c in r.correlations.items():
            margin = r.best_margin.get(target)
            if target == r.best_target:
                versus = "best"
            elif margin is None:
                versus = ""
            else:
                versus = f"{_r(margin.difference, margin.ci_low, margin.ci_high)} (n={margin.n})"
            rows.append([data(run), target, c.n, *_corr_cells(c), versus])
    return [
        para(
            f"Per-query {answers.measure} of each target against answer F1, over the scored "
            f"queries with that target; {level} bootstrap intervals. Best: the target whose "
            "score correlates most with answer F1 (highest Pearson r); beside each other "
            "target, the best one's Pearson r minus its own, paired on the queries where "
            "every target is non-empty (an interval holding 0: not clearly better)."
        ),
        table(
            [
                "run",
                "target",
                "n",
                f"Pearson r [{level} CI]",
                f"Spearman ρ [{level} CI]",
                f"best − this [{level} CI]",
            ],
            rows,
        ),
    ]


def _corr_cells(c: AnswerCorrelation) -> list[Cell]:
    return [
        _r(c.pearson, c.pearson_ci_low, c.pearson_ci_high),
        _r(c.spearman, c.spearman_ci_low, c.spearman_ci_high),
    ]


def _hits(answers: Answers, level: str) -> list[Block]:
    rows: list[list[Cell]] = [
        [data(run), *(f"{mean_ci(r.hits[g])} (n={r.hits[g].n})" for g in GROUP_LABELS)]
        for run, r in answers.runs.items()
        if any(m.n for m in r.hits.values())
    ]
    if not rows:
        return []
    return [
        para(
            f"Mean answer F1 by which target the run hits ({answers.hit_measure}), over the "
            f"scored queries with both a Raw and a Canonical target; {level} bootstrap "
            "intervals."
        ),
        table(["run", *GROUP_LABELS.values()], rows),
    ]


def _gap_cells(g: AnswerGap) -> list[Cell]:
    answer = _r(g.gap, g.ci_low, g.ci_high)
    score = _r(g.score_gap, g.score_ci_low, g.score_ci_high)
    return [g.n_covered, g.n_excluded, num(g.f1_covered), num(g.f1_excluded), answer, score]


def _coverage(answers: Answers, level: str) -> list[Block]:
    rows: list[list[Cell]] = [
        [data(run), *_gap_cells(r.coverage)]
        for run, r in answers.runs.items()
        if r.coverage is not None
    ]
    if not rows:
        return []
    m = answers.measure
    return [
        para(
            "Coverage control on answers: answer F1 of the scored queries with a Canonical "
            "target (covered) and without one (excluded), over those with a Raw target; the "
            f"answer-F1 gap (covered − excluded) beside the Raw {m} gap, {level} CI."
        ),
        table(
            ["run", "covered", "excluded", "F1 covered", "F1 excluded", "F1 gap", f"Raw {m} gap"],
            rows,
        ),
    ]


def _answers(report: RescoreReport) -> list[Block]:
    answers, level = report.answers, pct_label(report)
    if answers is None:
        return []
    out: list[Block] = [
        heading(2, "Answers"),
        para(
            "Answers the runs carry, scored against the gold answers: ",
            answers.scoring,
            ". Queries without a gold answer and abstention questions are not scored.",
        ),
        table(
            [
                "run",
                "answers",
                "scored",
                "no gold",
                "abstention",
                f"answer F1 [{level} CI]",
                f"exact match [{level} CI]",
            ],
            (
                [
                    data(run),
                    r.n_answers,
                    r.n_scored,
                    r.n_no_gold,
                    r.n_abstention,
                    mean_ci(r.f1),
                    f"{r.exact_match.n_exact} ({pct(r.exact_match.share)}) "
                    f"{bounds(r.exact_match.ci_low, r.exact_match.ci_high)}",
                ]
                for run, r in answers.runs.items()
            ),
        ),
    ]
    out.append(
        para(
            "How each run's answers were made (as tiap answers extract recorded it; not "
            "recorded: a system's own answers, or answers changed since):"
        )
    )
    out.append(
        Bullets(
            [
                (Data(run), ": ", "not recorded" if r.method is None else Data(r.method))
                for run, r in answers.runs.items()
            ]
        )
    )
    if answers.runs_without_answers:
        out.append(
            para(
                "Runs without answers (not in this section): ",
                *joined(", ", (Data(r) for r in answers.runs_without_answers)),
                ".",
            )
        )
    return out + _correlations(answers, level) + _hits(answers, level) + _coverage(answers, level)
