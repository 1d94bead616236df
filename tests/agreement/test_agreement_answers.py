"""The answer-correctness figure of the agreement report: per run, the share of its
answers the panel majority judged correct, undecided cases counted and left out, a
Wilson interval; in report.json, report.md and report.html."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from tiap.agreement import CaseMeta, LabelEntry, LabelTable, RaterInfo, compute_report, write_report
from tiap.rubric import load_rubric

RUBRIC = load_rubric("answer-correctness")
HOSTILE_RUN = "b<i>x</i>\x1b[31m"

# c: correct, i: incorrect, None: an invalid label (an abstention)
VOTES: list[tuple[str, tuple[str | None, str | None, str | None]]] = [
    ("run-a", ("correct", "correct", "correct")),  # correct
    ("run-a", ("correct", "correct", "incorrect")),  # correct
    ("run-a", ("incorrect", "incorrect", "correct")),  # incorrect
    ("run-a", ("correct", "incorrect", None)),  # a tie: undecided
    ("run-a", ("correct", None, None)),  # 1 valid label, quorum 2: undecided
    (HOSTILE_RUN, ("incorrect", "incorrect", "incorrect")),
    (HOSTILE_RUN, ("correct", "correct", "correct")),
    (HOSTILE_RUN, ("incorrect", "correct", "incorrect")),
]


def _table(kind: str = "answer") -> LabelTable:
    cases = [
        CaseMeta(case_id=f"a{i}", run=run, kind=kind, category="temporal-reasoning")
        for i, (run, _) in enumerate(VOTES)
    ]
    raters = [RaterInfo(name=j, kind="judge") for j in ("j1", "j2", "j3")]
    labels = [
        LabelEntry(case_id=f"a{i}", rater=f"j{k + 1}", label=lab)
        for i, (_, votes) in enumerate(VOTES)
        for k, lab in enumerate(votes)
    ]
    return LabelTable(cases=cases, raters=raters, labels=labels)


def test_each_runs_share_judged_correct_with_its_wilson_interval() -> None:
    report = compute_report(_table(), RUBRIC, resamples=0)
    a = report.answer_correctness
    assert a is not None
    assert (a.label, a.scale) == ("correct", "binary")
    run_a, run_b = a.runs["run-a"], a.runs[HOSTILE_RUN]
    # run-a: 5 answers, 3 with a majority (2 correct), a tie and a no-quorum left out
    assert (run_a.cases, run_a.decided, run_a.undecided, run_a.correct) == (5, 3, 2, 2)
    assert run_a.value == pytest.approx(2 / 3)
    assert (run_b.cases, run_b.decided, run_b.undecided, run_b.correct) == (3, 3, 0, 1)
    for r in (run_a, run_b):
        low, high = proportion_confint(r.correct, r.decided, alpha=0.05, method="wilson")
        assert r.ci == pytest.approx([low, high], abs=1e-12)
        assert r.ci_method == "wilson"
    # 1 of 3 by hand: p 1/3, z 1.959964, z^2/n 1.280486; centre (1/3 + 0.640243) /
    # 2.280486 = 0.426917; half 1.959964 / 2.280486 * sqrt(2/27 + 3.841459/36) =
    # 0.859450 * 0.425184 = 0.365425: [0.0615, 0.7923]
    assert run_b.ci == pytest.approx([0.0615, 0.7923], abs=1e-4)


def test_no_decided_answer_gives_no_share_and_says_why() -> None:
    table = _table()
    only = LabelTable(
        cases=table.cases[4:5],
        raters=table.raters,
        labels=[e for e in table.labels if e.case_id == "a4"],
    )
    a = compute_report(only, RUBRIC, resamples=0).answer_correctness
    assert a is not None
    r = a.runs["run-a"]
    assert (r.cases, r.decided, r.undecided, r.value, r.ci) == (1, 0, 1, None, None)
    assert r.reason == "no answer of the run has a majority label"


def test_the_figure_is_in_every_report_file_and_absent_for_other_kinds(tmp_path: Path) -> None:
    report = compute_report(_table(), RUBRIC, resamples=0)
    write_report(report, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["answer_correctness"]["runs"]["run-a"]["correct"] == 2
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Answer correctness by run" in md
    assert "| run-a | 5 | 3 | 2 | 0.667 \\[0.208, 0.939\\] (2/3) |" in md
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Answer correctness by run" in html
    assert "<i>x</i>" not in html
    assert "b&lt;i&gt;x&lt;/i&gt;" in html
    assert "\x1b" not in md + html
    contested = compute_report(_table(kind="contested"), RUBRIC, resamples=0)
    assert contested.answer_correctness is None
    assert "answer_correctness" not in contested.to_json_dict()
