"""A relevance-label verdict rests on enough decided pairs: below a minimum decided
share of a check's pairs (``--min-decided``, default 0.8) the check is inconclusive
with its reason, and shares carry Wilson intervals, honest at small n."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.qrels_cases import qrels_case
from tiap.agreement import compute_report, labels_from_workspace
from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.rubric import load_rubric
from tiap.stats import wilson_interval

R, N = "relevant", "not_relevant"
DATASET = "Dialogue/LoCoMo/single_hop"


def label(case_id: str, rater: str, value: str | None) -> LabelRecord:
    rubric = load_rubric("qrels-relevance")
    return LabelRecord(
        case_id=case_id,
        rater=rater,
        rater_kind="judge",
        label=value,
        reason=None if value is not None else "bad_request",
        rubric_id=rubric.id,
        rubric_hash=rubric.content_hash,
    )


def pairs(path: Path, decided: int, total: int = 60) -> Path:
    """``total`` annotated-relevant pairs; three judges say relevant on the first
    ``decided``; on the others two of them gave no valid output (no quorum)."""
    with Workspace(path) as ws:
        cases = [qrels_case(i) for i in range(total)]
        ws.add_cases(cases)
        rows = []
        for i, c in enumerate(cases):
            for j in range(3):
                ok = i < decided or j == 0
                rows.append(label(c.case_id, f"judge-{j}", R if ok else None))
        ws.add_labels(rows)
    return path


def test_three_decided_pairs_of_sixty_are_not_a_verdict(tiap_cli, tmp_path: Path, capsys) -> None:
    db = pairs(tmp_path / "q.sqlite", 3)
    assert tiap_cli("agreement", "report", "--db", db, "--out", tmp_path / "r").code == 0
    printed = capsys.readouterr().out
    lo, _ = wilson_interval(3, 3)
    assert f"qrels {DATASET}: inconclusive; confirmed 1.000 [{lo:.3f}, 1.000] (3/3 of 60)" in (
        printed
    )
    assert "labels reliable" not in printed
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    group = data["qrels"]["by_dataset"][DATASET]
    assert (group["precision"], group["verdict"]) == ("inconclusive", "inconclusive")
    assert group["confirmed"]["ci"] == pytest.approx([lo, 1.0])
    assert group["confirmed"]["ci_method"] == "wilson"
    assert data["qrels"]["min_decided"] == 0.8
    assert group["reasons"][0] == (
        f"confirmed share 1.000 [{lo:.3f}, 1.000] (3/3): only 3 of 60 annotated-relevant "
        "pair(s) have a decided label (0.050 < 0.80, --min-decided): inconclusive"
    )
    md = (tmp_path / "r" / "report.md").read_text()
    assert "--min-decided" in md


def test_enough_decided_pairs_reach_a_verdict(tmp_path: Path) -> None:
    rubric = load_rubric("qrels-relevance")
    # 50 of 60 decided (0.83 >= 0.8), all confirmed: Wilson lower bound 0.929 >= 0.9
    with Workspace(pairs(tmp_path / "a.sqlite", 50)) as ws:
        report = compute_report(labels_from_workspace(ws), rubric, resamples=0)
    g = report.qrels.by_dataset[DATASET]  # type: ignore[union-attr]
    assert (g.confirmed.n, g.confirmed.cases) == (50, 60)
    assert g.confirmed.ci == pytest.approx(list(wilson_interval(50, 50)))
    assert (g.precision, g.verdict) == ("pass", "labels reliable")
    # the same pairs with --min-decided 0.9: 50/60 = 0.833 is too few
    with Workspace(tmp_path / "a.sqlite") as ws:
        strict = compute_report(labels_from_workspace(ws), rubric, resamples=0, min_decided=0.9)
    g = strict.qrels.by_dataset[DATASET]  # type: ignore[union-attr]
    assert (g.precision, g.verdict) == ("inconclusive", "inconclusive")
    assert (
        "only 50 of 60 annotated-relevant pair(s) have a decided label (0.833 < 0.90"
        in (g.reasons[0])
    )
    # 30 of 30 decided and confirmed: every pair decided, but 30 pairs cannot show a
    # share of at least 0.9 (Wilson lower bound 0.886)
    with Workspace(pairs(tmp_path / "b.sqlite", 30, total=30)) as ws:
        small = compute_report(labels_from_workspace(ws), rubric, resamples=0)
    g = small.qrels.by_dataset[DATASET]  # type: ignore[union-attr]
    assert g.confirmed.ci is not None
    assert g.confirmed.ci[0] == pytest.approx(wilson_interval(30, 30)[0])
    assert g.confirmed.ci[0] < 0.9
    assert (g.precision, g.verdict) == ("inconclusive", "inconclusive")
