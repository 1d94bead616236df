"""docs/paper.md names real keys: each key it lists resolves in a report tiap writes
(rescore and agreement reports of small inputs, the suite and cases models)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tiap.agreement import compute_report, labels_from_workspace
from tiap.cases.extract import ExtractReport
from tiap.cases.from_qrels import DatasetCounts, QrelsImportReport
from tiap.cases.models import Case, EvidenceItem, LabelRecord, rank_bucket
from tiap.cases.workspace import Workspace
from tiap.rescore import rescore_bundle
from tiap.rescore.suite_models import SuiteReport
from tiap.rubric import load_rubric
from tiap.traces.bundle import read_bundle

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "paper.md").read_text(encoding="utf-8")

#: (as the page writes it, the path in report.json; ``*``: any key or element)
RESCORE = [
    ("`runs[run]`", "runs.*"),
    ("`target_order.runs[run][m].monotone`", "target_order.runs.*.*.monotone"),
    ("`target_order.n_not_monotone`", "target_order.n_not_monotone"),
    (
        "`target_order.runs[run][m].containment_consistent`",
        "target_order.runs.*.*.containment_consistent",
    ),
    ("`target_order.n_not_containment_consistent`", "target_order.n_not_containment_consistent"),
    ("`run_pairs`", "run_pairs"),
    ("`design`", "design"),
    ("`headline.winner_flips`", "headline.winner_flips"),
    ("`headline.design`", "headline.design"),
    ("`subsets`", "headline.subsets"),
    ("`other_subsets`", "other_subsets.subsets"),
    ("`differs`", "other_subsets.differs"),
    ("`pooled[pair].instability`", "pooled.*.instability"),
    ("`pooled[pair].confound`", "pooled.*.confound"),
    ("`pooled_runs.runs`", "pooled_runs.runs"),
    ("`pooled_runs.left_out`", "pooled_runs.left_out"),
    ("`pooled_runs.n_raw_only`", "pooled_runs.n_raw_only"),
    ("`parameters.pool_raw_only`", "parameters.pool_raw_only"),
    ("`coverage`", "coverage"),
    ("`saturation`", "saturation"),
    ("`shift_distribution`", "shift_distribution"),
]
AGREEMENT = [
    ("`paper.plurality[scale]`", "paper.plurality.binary"),
    ("`counts`, `shares`, `tie_rule`, `n_ties_broken`", "paper.plurality.labels.n_ties_broken"),
    ("`majority[scale]`", "majority.labels"),
    ("`paper.complete_case_agreement[scale]`", "paper.complete_case_agreement.labels.n_cases"),
    ("`percent_agreement[scale]`", "percent_agreement.labels"),
    ("`paper.fleiss_judges_and_reference[scale]`", "paper.fleiss_judges_and_reference.binary.n"),
    ("`paper.fleiss_judges[scale]`", "paper.fleiss_judges.binary.raters"),
    ("`fleiss_kappa[scale]`", "fleiss_kappa.binary"),
    ("`gate.figures.fleiss_kappa`", "gate.figures.fleiss_kappa"),
    ("`gate.gate_raters`", "gate.gate_raters"),
    ("`gate.fleiss_raters`", "gate.fleiss_raters"),
    ("`prevalence.by_dataset`", "prevalence.by_dataset"),
]


def _resolve(data: Any, path: str) -> Any:
    for part in path.split("."):
        if part == "*":
            assert data, f"{path}: nothing at '*'"
            data = data[0] if isinstance(data, list) else next(iter(data.values()))
        else:
            assert isinstance(data, dict), f"{path}: '{part}' of a {type(data).__name__}"
            assert part in data, f"{path}: no '{part}' (keys: {sorted(data)[:20]})"
            data = data[part]
    return data


@pytest.mark.parametrize(("shown", "path"), RESCORE)
def test_rescore_keys(shown: str, path: str, sample_bundle_dir: Path) -> None:
    assert shown in PAGE
    report = _rescore_json(sample_bundle_dir)
    _resolve(report, path)


_CACHE: dict[str, Any] = {}


def _rescore_json(bundle_dir: Path) -> Any:
    if "rescore" not in _CACHE:
        bundle = read_bundle(bundle_dir)
        result = rescore_bundle(bundle, ks=(10,), resamples=20, subsets="matched")
        _CACHE["rescore"] = result.report.model_dump(mode="json")
    return _CACHE["rescore"]


def test_agreement_keys(tmp_path: Path) -> None:
    rubric = load_rubric("contested-credit")
    labels = ["supports", "partial", "does_not_support", "supports"]
    with Workspace(tmp_path / "w.sqlite") as ws:
        cases = [
            Case(
                case_id=f"c{i}",
                dataset="locomo",
                run="r",
                store="s",
                query_id=f"q{i}",
                query_index=i,
                question="?",
                answer="a",
                category="1",
                evidence=[EvidenceItem(source_id=f"D1:{i}", text="t", speaker="A")],
                memory_id=f"m{i}",
                memory_text="m",
                memory_source_ids=[f"D1:{i}"],
                rank=3,
                rank_bucket=rank_bucket(3),
                k=60,
            )
            for i in range(4)
        ]
        ws.add_cases(cases)
        ws.save_subset("validation", [c.case_id for c in cases], params={"kind": "validation"})
        ws.add_labels(
            [
                LabelRecord(
                    case_id=c.case_id,
                    rater=rater,
                    rater_kind=kind,
                    label=label,
                    rubric_id=rubric.id,
                    rubric_hash=rubric.content_hash,
                    panel="p" if kind == "judge" else None,
                )
                for c, label in zip(cases, labels, strict=True)
                for rater, kind in (("j1", "judge"), ("j2", "judge"), ("ann", "human"))
            ]
        )
        table = labels_from_workspace(ws, subset="validation")
    report = compute_report(table, rubric, resamples=0, gate_raters="judges+reference")
    data = report.model_dump(mode="json")
    for shown, path in AGREEMENT:
        assert shown in PAGE
        _resolve(data, path)
    assert data["gate"]["gate_raters"] == "judges+reference"


def test_cases_and_suite_keys() -> None:
    assert "`rule`" in PAGE
    assert "rule" in ExtractReport.model_fields
    assert "`group_by`" in PAGE
    assert "group_by" in QrelsImportReport.model_fields
    assert "`tasks`" in PAGE
    assert "tasks" in DatasetCounts.model_fields
    assert "suite `scale` = 100" in PAGE
    assert "scale" in SuiteReport.model_fields
    assert "`dataset`" in PAGE
    assert "dataset" in Case.model_fields


def test_answers_keys() -> None:
    """The answer-level analysis' keys (the sample bundle's runs carry no answers, so
    they are checked on the report's models)."""
    from tiap.rescore.answer_models import AnswerRun
    from tiap.rescore.report_models import RescoreReport

    assert "rescore `answers.runs[run]`" in PAGE
    assert "answers" in RescoreReport.model_fields
    for key in ("f1", "exact_match", "correlations", "hits", "coverage"):
        assert f"`{key}`" in PAGE
        assert key in AnswerRun.model_fields
    assert "`tiap answers extract --reader MODEL`" in PAGE


def test_answer_correctness_keys() -> None:
    from support.answer_cases import answer_case
    from tiap.agreement import CaseMeta, LabelEntry, LabelTable, RaterInfo
    from tiap.cases.from_answers import AnswerImportReport

    assert "`tiap cases from-answers`" in PAGE
    assert "`variants`" in PAGE
    assert "variants" in AnswerImportReport.model_fields
    rubric = load_rubric("answer-correctness")
    cases = [answer_case(i) for i in range(3)]
    table = LabelTable(
        cases=[CaseMeta(case_id=c.case_id, run=c.run, kind=c.kind) for c in cases],
        raters=[RaterInfo(name=j, kind="judge") for j in ("j1", "j2")],
        labels=[
            LabelEntry(case_id=c.case_id, rater=j, label="correct")
            for c in cases
            for j in ("j1", "j2")
        ],
    )
    data = compute_report(table, rubric, resamples=0).to_json_dict()
    assert "`answer_correctness.runs[run]`" in PAGE
    for key in ("correct", "decided", "undecided", "value", "ci"):
        assert f"`{key}`" in PAGE
        _resolve(data, f"answer_correctness.runs.*.{key}")
