"""The answer-correctness figure of an agreement report (``report.json`` key
``answer_correctness``): per run, the share of its answers the panel majority judged
correct.

On a report over ``answer`` cases (a run's generated answers, :mod:`tiap.cases.from_answers`)
each run's answer cases in scope are counted: ``decided`` those with a majority label
(the majority vote of the report, :mod:`tiap.agreement.votes`, on the rubric's
binary collapse when it has one, else on its labels), ``correct`` those whose
majority is the positive label (the binary collapse's positive label, else the
rubric's first), ``undecided`` the rest (ties, no majority, no quorum): counted and
left out of the share. The share is ``correct / decided`` with its 95% Wilson score
interval (honest at small n); no decided case: no share, with the reason. It is the
panel's judgment of correctness, as LongMemEval's LLM judge gives one, not a measured
accuracy: read it with the agreement figures of the same report.
"""

from __future__ import annotations

import numpy as np

from tiap.agreement.answer_correctness_models import NO_DECIDED, AnswerCorrectness, RunCorrectness
from tiap.agreement.label_table import LabelTable
from tiap.agreement.report_text import ci, missing
from tiap.agreement.scale import Scale
from tiap.cases.vocab import ANSWER
from tiap.report.numbers import num
from tiap.stats import wilson_interval


def _run(winner: np.ndarray, decided: np.ndarray, group: np.ndarray) -> RunCorrectness:
    cases, n = int(group.sum()), int((decided & group).sum())
    correct = int(((winner == 0) & decided & group).sum())
    if not n:
        return RunCorrectness(
            cases=cases, decided=0, undecided=cases, correct=0, value=None, reason=NO_DECIDED
        )
    return RunCorrectness(
        cases=cases,
        decided=n,
        undecided=cases - n,
        correct=correct,
        value=correct / n,
        ci=list(wilson_interval(correct, n)),
        ci_method="wilson",
    )


def answer_correctness(table: LabelTable, scales: list[Scale]) -> AnswerCorrectness | None:
    """The figure (see the module doc), or ``None`` without answer cases in scope.
    ``scales``: the report's, the labels first, then the binary collapse (positive
    label first) when the rubric has one."""
    answers = np.array([c.kind == ANSWER for c in table.cases], dtype=bool)
    if not answers.any():
        return None
    scale = scales[-1]
    winner = scale.votes.winner
    decided = winner >= 0
    runs = np.array([c.run or "(none)" for c in table.cases], dtype=object)
    by_run = {
        str(r): _run(winner, decided, answers & (runs == r))
        for r in sorted(set(runs[answers].tolist()))
    }
    return AnswerCorrectness(
        label=scale.cats[0],
        scale="binary" if len(scales) > 1 else "labels",
        runs=by_run,
    )


def share_text(r: RunCorrectness) -> str:
    """``0.400 [0.198, 0.643] (8/20)``, or ``n/a (why)``."""
    if r.value is None:
        return missing(r.reason)
    return f"{num(r.value)}{ci(r.ci)} ({r.correct}/{r.decided})"


def table(a: AnswerCorrectness) -> tuple[list[str], list[list[object]]]:
    """One row per run: its answer cases, decided, undecided, and the share correct."""
    header = ["run", "answers", "decided", "undecided", f"judged {a.label} [95% CI]"]
    rows: list[list[object]] = [
        [run, r.cases, r.decided, r.undecided, share_text(r)] for run, r in a.runs.items()
    ]
    return header, rows


def lines(a: AnswerCorrectness) -> list[str]:
    """The terminal summary: one line per run."""
    return [
        f"answers of run {run} judged {a.label} by the panel majority: {share_text(r)}; "
        f"{r.undecided} of {r.cases} undecided (left out)"
        for run, r in a.runs.items()
    ]
