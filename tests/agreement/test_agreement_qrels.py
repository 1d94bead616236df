"""The relevance-label figures of a report on qrels pairs: confirmed shares,
negatives found relevant, panel against humans, and each dataset's verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from support.qrels_cases import qrels_case
from tiap.agreement import compute_report, labels_from_workspace, write_report
from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.limits import check_share_threshold
from tiap.rubric import load_rubric
from tiap.stats import wilson_interval

R, N = "relevant", "not_relevant"
A, B = "Dialogue/A", "Dialogue/<b>B</b>"  # a dataset name that is markup stays text


def _label(case_id: str, rater: str, label: str, kind: str = "judge") -> LabelRecord:
    rubric = load_rubric("qrels-relevance")
    return LabelRecord(
        case_id=case_id,
        rater=rater,
        rater_kind=kind,  # type: ignore[arg-type]
        label=label,
        rubric_id=rubric.id,
        rubric_hash=rubric.content_hash,
    )


@pytest.fixture
def ws(tmp_path: Path):
    """Dataset A: 20 annotated-relevant pairs, the panel confirms 18; 10 negatives, it
    finds 4 relevant. Dataset B: 10 annotated-relevant pairs, all confirmed; 2 grade-0
    pairs, one found relevant. Three judges vote 2-1 or 3-0; a person labelled the
    first 10 pairs of A like the majority, except one."""
    cases, votes = [], {}
    for i in range(20):
        c = qrels_case(i, dataset=A)
        cases.append(c)
        votes[c.case_id] = [R, R, N] if i < 18 else [N, N, R]
    for i in range(20, 30):
        c = qrels_case(i, dataset=A, negative=True, grade=None)
        cases.append(c)
        votes[c.case_id] = [R, R, R] if i < 24 else [N, N, N]
    for i in range(30, 40):
        c = qrels_case(i, dataset=B)
        cases.append(c)
        votes[c.case_id] = [R, R, R]
    for i in range(40, 42):
        c = qrels_case(i, dataset=B, grade=0)
        cases.append(c)
        votes[c.case_id] = [R, N, R] if i == 40 else [N, N, N]
    with Workspace(tmp_path / "w.sqlite") as handle:
        handle.add_cases(cases)
        rows = [
            _label(cid, f"judge-{j}", label)
            for cid, labels in votes.items()
            for j, label in enumerate(labels)
        ]
        for i, c in enumerate(cases[:10]):
            human = R if i != 3 else N
            rows.append(_label(c.case_id, "alice", human, "human"))
        handle.add_labels(rows)
        yield handle


def test_confirmed_and_found_relevant_shares_per_dataset(ws: Workspace) -> None:
    report = compute_report(labels_from_workspace(ws), load_rubric("qrels-relevance"), seed=7)
    q = report.qrels
    assert q is not None
    assert (q.positive_label, q.min_confirmed, q.max_missed) == (R, 0.9, 0.1)
    a, b = q.by_dataset[A], q.by_dataset[B]
    assert (a.cases, a.annotated_relevant, a.annotated_not_relevant, a.negatives) == (30, 20, 0, 10)
    assert (a.confirmed.relevant, a.confirmed.n, a.confirmed.value) == (18, 20, 0.9)
    assert (a.negatives_found_relevant.relevant, a.negatives_found_relevant.n) == (4, 10)
    assert a.negatives_found_relevant.value == pytest.approx(0.4)
    # 10 of 10: a Wilson interval, not the degenerate [1, 1] of a percentile bootstrap
    assert b.confirmed.value == 1.0
    assert b.confirmed.ci == pytest.approx(list(wilson_interval(10, 10)))
    assert b.graded_not_relevant_found_relevant.value == pytest.approx(0.5)
    assert b.negatives == 0
    overall = q.overall
    assert (overall.confirmed.relevant, overall.confirmed.n) == (28, 30)
    # humans: the first 10 pairs of A, 9 say relevant; they agree with the majority on 9
    assert a.confirmed_by_reference is not None
    assert (a.confirmed_by_reference.relevant, a.confirmed_by_reference.n) == (9, 10)
    assert b.confirmed_by_reference is not None
    assert b.confirmed_by_reference.value is None  # nobody labelled B
    assert a.panel_vs_reference is not None
    assert (a.panel_vs_reference.n, a.panel_vs_reference.agreement.value) == (10, 0.9)


def test_share_intervals_are_wilson_and_the_kappa_is_the_report_bootstrap(ws: Workspace) -> None:
    table = labels_from_workspace(ws)
    rubric = load_rubric("qrels-relevance")
    report = compute_report(table, rubric, resamples=400, seed=11)
    a = report.qrels.by_dataset[A]  # type: ignore[union-attr]
    # shares: Wilson score intervals of their counts, whatever the resamples
    assert a.confirmed.ci == pytest.approx(list(wilson_interval(18, 20)))
    assert a.confirmed.ci_method == "wilson"
    assert a.negatives_found_relevant.ci == pytest.approx(list(wilson_interval(4, 10)))
    assert a.panel_vs_reference is not None
    assert a.panel_vs_reference.agreement.ci == pytest.approx(list(wilson_interval(9, 10)))
    none = compute_report(table, rubric, resamples=0)
    assert none.qrels.by_dataset[A].confirmed == a.confirmed  # type: ignore[union-attr]
    # the kappa: the report's bootstrap (same draws and seed), on 10 pairs: unreliable
    kappa = a.panel_vs_reference.kappa
    assert kappa.ci is not None
    assert (kappa.ci_method, kappa.ci_unreliable) == ("percentile", True)
    assert none.qrels.by_dataset[A].panel_vs_reference.kappa.ci is None  # type: ignore[union-attr]
    again = compute_report(table, rubric, resamples=400, seed=11)
    assert again.qrels == report.qrels
    # the draws are the report's: over every pair, the panel against the humans is the
    # report's majority against the reference, with the same interval
    overall = report.qrels.overall.panel_vs_reference  # type: ignore[union-attr]
    majority = report.vs_reference.majority
    assert overall is not None
    assert majority is not None
    assert majority.binary is not None
    assert overall.kappa.value == majority.binary.kappa.value
    assert overall.kappa.ci == majority.binary.kappa.ci


def _majority_relevant(ws: Workspace) -> set[str]:
    votes: dict[str, list[str]] = {}
    for rec in ws.latest_labels(rater_kind="judge"):
        votes.setdefault(rec.case_id, []).append(str(rec.label))
    return {cid for cid, v in votes.items() if v.count(R) * 2 > len(v)}


def test_verdicts_follow_the_thresholds(ws: Workspace) -> None:
    table, rubric = labels_from_workspace(ws), load_rubric("qrels-relevance")
    report = compute_report(table, rubric, resamples=0)
    a, b = report.qrels.by_dataset[A], report.qrels.by_dataset[B]  # type: ignore[union-attr]
    # Wilson bounds whatever the resamples. A: confirmed 18/20 in [0.699, 0.972], neither
    # above nor below 0.9; negatives 4/10 in [0.168, 0.687], above 0.1. B: 10/10 in
    # [0.722, 1]: ten pairs cannot show a share of at least 0.9
    assert (a.precision, a.missed, a.verdict) == ("inconclusive", "fail", "missing labels")
    assert (b.precision, b.missed, b.verdict) == ("inconclusive", "no data", "inconclusive")
    assert a.reasons[1].startswith(
        "negatives found relevant 0.400 [0.168, 0.687] (4/10): above 0.10"
    )
    strict = compute_report(table, rubric, resamples=0, min_confirmed=0.98, max_missed=0.7)
    a = strict.qrels.by_dataset[A]  # type: ignore[union-attr]
    assert (a.precision, a.missed, a.verdict) == ("fail", "pass", "labels unreliable")
    lenient = compute_report(table, rubric, resamples=0, min_confirmed=0.7)
    b = lenient.qrels.by_dataset[B]  # type: ignore[union-attr]
    assert (b.precision, b.missed, b.verdict) == ("pass", "no data", "labels reliable")
    # with intervals, A's confirmed share (0.9, n=20) is neither clearly above nor below
    boot = compute_report(table, rubric, resamples=1000, seed=1)
    a = boot.qrels.by_dataset[A]  # type: ignore[union-attr]
    assert a.confirmed.ci is not None
    assert a.confirmed.ci[0] < 0.9 <= a.confirmed.ci[1]
    assert a.precision == "inconclusive"
    assert a.verdict == "missing labels"  # the negatives' lower bound is far above 0.1


@pytest.mark.parametrize("value", [math.nan, math.inf, -0.1, 1.5, "0.9", True])
def test_thresholds_are_finite_shares(ws: Workspace, value: object) -> None:
    with pytest.raises(TiapError, match="min_confirmed must be a"):
        compute_report(
            labels_from_workspace(ws),
            load_rubric("qrels-relevance"),
            min_confirmed=value,  # type: ignore[arg-type]
        )
    with pytest.raises(TiapError, match="--max-missed must be a"):
        check_share_threshold("--max-missed", value)  # type: ignore[arg-type]


def test_report_files_carry_the_qrels_section_and_keys(ws: Workspace, tmp_path: Path) -> None:
    report = compute_report(labels_from_workspace(ws), load_rubric("qrels-relevance"), seed=3)
    write_report(report, tmp_path / "r")
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert set(data["qrels"]) == {
        "positive_label", "min_confirmed", "max_missed", "min_decided", "rule", "overall",
        "by_dataset",
    }  # fmt: skip
    assert set(data["qrels"]["by_dataset"][A]) == {
        "cases", "annotated_relevant", "annotated_not_relevant", "negatives", "confirmed",
        "confirmed_by_reference", "graded_not_relevant_found_relevant",
        "negatives_found_relevant", "negatives_found_relevant_by_reference",
        "panel_vs_reference", "precision", "missed", "verdict", "reasons",
    }  # fmt: skip
    assert set(data["qrels"]["overall"]["confirmed"]) == {
        "cases", "n", "relevant", "value", "ci", "reason", "ci_method"
    }  # fmt: skip
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Relevance labels (qrels)" in md
    assert f"| {A} | missing labels | inconclusive | fail | 30 | 20 | 10 |" in md
    html = (tmp_path / "r" / "report.html").read_text()
    assert "<h2>Relevance labels (qrels)</h2>" in html
    assert "Dialogue/&lt;b&gt;B&lt;/b&gt;" in html
    assert "<b>B</b>" not in html
    # same inputs and seed, same bytes
    write_report(report, tmp_path / "again")
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "r" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()


def test_a_report_on_contested_credits_has_no_qrels_key(tmp_path: Path) -> None:
    from agreement_support import add_labels, make_case

    with Workspace(tmp_path / "c.sqlite") as ws:
        ws.add_cases([make_case(i) for i in range(6)])
        add_labels(ws, "j1", ["supports", "partial"] * 3, case_ids=ws.case_ids())
        report = compute_report(labels_from_workspace(ws), load_rubric())
    assert report.qrels is None
    assert "qrels" not in report.to_json_dict()


def test_a_report_over_both_kinds_keeps_the_rubric_kind(ws: Workspace) -> None:
    from agreement_support import make_case

    ws.add_cases([make_case(i) for i in range(3)])
    report = compute_report(labels_from_workspace(ws), load_rubric("qrels-relevance"))
    assert report.n_cases == 42
    assert any("left out 3 case(s) of kind contested" in n for n in report.notes)


def test_the_command_checks_the_thresholds_and_prints_the_verdicts(
    tiap_cli, ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(*extra: str) -> int:
        out = str(tmp_path / "o")
        return tiap_cli("agreement", "report", "--db", str(ws.path), "--out", out, *extra).code

    assert run("--min-confirmed", "nan") == 2
    assert "--min-confirmed must be a finite number in [0, 1] (got nan)" in capsys.readouterr().err
    assert run("--max-missed", "2") == 2
    capsys.readouterr()
    assert run("--resamples", "0") == 0
    out = capsys.readouterr().out
    assert f"qrels {A}: missing labels; confirmed 0.900 [0.699, 0.972] (18/20 of 20)" in out
    assert "qrels all datasets:" in out
    data = json.loads((tmp_path / "o" / "report.json").read_text())
    assert data["rubric"]["id"] == "qrels-relevance"  # the rubric the labels name
    # ten of ten pairs confirmed: the Wilson lower bound 0.722 is below 0.9
    assert data["qrels"]["by_dataset"][B]["verdict"] == "inconclusive"
