"""``tiap cases from-qrels --group-by dataset|task``: "up to N per dataset" where a
dataset is LMEB's (a tree's ``Type/Dataset``, its tasks together), or each task."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from test_case_from_qrels import graded_task

from support.lmeb import RUN_FILE
from tiap.agreement import compute_report, labels_from_workspace
from tiap.cases.from_qrels import from_qrels, qrels_cases
from tiap.cases.models import LabelRecord
from tiap.cases.qrels_source import read_source
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import load_rubric

TOY, OTHER = "Episodic/toy", "Semantic/other"


def toy_tree(root: Path) -> Path:
    """``Episodic/toy/{graded,graded2}``: two tasks of one dataset sharing its corpus
    (the same query ids in both, 24 qrels lines each), and ``Semantic/other``, a task
    with a corpus of its own two levels down (a dataset of its own)."""
    task = graded_task(root)
    shutil.copytree(task, task.parent / "graded2")
    other = root / OTHER
    shutil.copytree(task, other)
    shutil.copy(task.parent / "corpus.jsonl", other / "corpus.jsonl")
    return root


def test_a_dataset_draws_from_its_tasks_together(tmp_path: Path) -> None:
    src = read_source(toy_tree(tmp_path))
    cases, report = qrels_cases(src, per_dataset=10, negatives=4, run=RUN_FILE)
    assert report.group_by == "dataset"
    assert list(report.datasets) == [TOY, OTHER]
    toy = report.datasets[TOY]
    assert toy.tasks == [f"{TOY}/graded", f"{TOY}/graded2"]
    # the two tasks' 48 lines are one pool: 12, 24, 12 by grade; 10 by largest remainder
    assert toy.strata == {"grade 2": 12, "grade 1": 24, "grade 0": 12}
    assert toy.allocation == {"grade 2": 3, "grade 1": 5, "grade 0": 2}
    assert (toy.qrels_lines, toy.queries, toy.sampled, toy.negatives) == (48, 12, 10, 4)
    assert toy.documents == 30  # one shared corpus
    assert toy.path == str(tmp_path / TOY)
    by_dataset = Counter(c.dataset for c in cases)
    assert by_dataset == {TOY: 14, OTHER: 14}
    drawn = [c for c in cases if c.dataset == TOY]
    tasks = Counter(c.metadata["task"] for c in drawn)
    assert set(tasks) == {f"{TOY}/graded", f"{TOY}/graded2"}  # both tasks drawn from
    assert all("task" not in c.metadata for c in cases if c.dataset == OTHER)
    # the same query id in both tasks is two queries: the ids and indices tell them apart
    assert len({c.case_id for c in cases}) == len(cases)
    # grade 2 (12 queries, one line each, 3 to take): positions 2, 6, 10 of task order
    grade2 = sorted(
        (c.metadata["task"], c.query_id) for c in drawn if c.grade == 2 and c.pair == "annotated"
    )
    assert grade2 == [(f"{TOY}/graded", "s_2_q"), (f"{TOY}/graded2", "s_0_q"),
                      (f"{TOY}/graded2", "s_4_q")]  # fmt: skip


def test_group_by_task_is_the_draw_per_task(tmp_path: Path) -> None:
    src = read_source(toy_tree(tmp_path))
    per_task, report = qrels_cases(src, per_dataset=10, group_by="task")
    assert list(report.datasets) == [f"{TOY}/graded", f"{TOY}/graded2", OTHER]
    assert Counter(c.dataset for c in per_task) == dict.fromkeys(report.datasets, 10)
    assert all("task" not in c.metadata for c in per_task)
    assert all(c.tasks == [name] for name, c in report.datasets.items())
    # a dataset of one task draws the same pairs either way, and a pair is one case
    # id however it is grouped
    grouped, _ = qrels_cases(src, per_dataset=10)
    assert [c.case_id for c in per_task if c.dataset == OTHER] == [
        c.case_id for c in grouped if c.dataset == OTHER
    ]
    ids = {c.case_id for c in per_task}
    assert {c.case_id for c in grouped if c.dataset == TOY} <= ids | {
        c.case_id for c in qrels_cases(src, per_dataset=48, group_by="task")[0]
    }
    with pytest.raises(TiapError, match="group_by must be one of dataset, task"):
        qrels_cases(src, group_by="scene")  # type: ignore[arg-type]


def test_a_single_task_or_a_bundle_is_its_own_dataset(tmp_path: Path) -> None:
    task = graded_task(tmp_path)
    for group_by in ("dataset", "task"):
        _, report = qrels_cases(read_source(task), per_dataset=5, group_by=group_by)
        assert list(report.datasets) == ["graded"]


def test_recorded_with_the_cases_and_the_report_groups_by_it(tmp_path: Path) -> None:
    root = toy_tree(tmp_path / "src")
    rubric = load_rubric("qrels-relevance")
    with Workspace(tmp_path / "w.sqlite") as ws:
        report = from_qrels(root, ws, per_dataset=6)
        params = ws.subset_params("qrels")
        assert params["group_by"] == "dataset"
        assert set(params["allocation"]) == {TOY, OTHER}
        assert ws.events("cases.from_qrels")[-1]["group_by"] == "dataset"
        assert report.version is not None
        # another grouping is another draw: refused unless replaced
        with pytest.raises(TiapError, match="subset 'qrels' exists"):
            from_qrels(root, ws, per_dataset=6, group_by="task")
        records = [
            LabelRecord(
                case_id=cid,
                rater=f"j{j}",
                rater_kind="judge",
                label="relevant",
                rubric_id=rubric.id,
                rubric_hash=rubric.content_hash,
                panel="p",
                model=f"m/{j}",
            )
            for cid in ws.case_ids(subset="qrels")
            for j in range(3)
        ]
        ws.add_labels(records)
        table = labels_from_workspace(ws, subset="qrels")
    agreement = compute_report(table, rubric, resamples=0)
    assert agreement.qrels is not None
    assert set(agreement.qrels.by_dataset) == {TOY, OTHER}
    assert (
        agreement.qrels.by_dataset[TOY].annotated_relevant
        + (agreement.qrels.by_dataset[OTHER].annotated_relevant)
        <= 12
    )
    assert set(agreement.prevalence.by_dataset) == {TOY, OTHER}


def test_the_command_takes_group_by(tiap_cli, tmp_path: Path) -> None:
    root = toy_tree(tmp_path / "src")
    res = tiap_cli("cases", "from-qrels", root, "--db", tmp_path / "w.sqlite",
                   "--per-dataset", "4", "--group-by", "task")  # fmt: skip
    assert res.code == 0, res.err
    assert "per dataset (--group-by task)" in res.out
    res = tiap_cli("cases", "from-qrels", root, "--db", tmp_path / "x.sqlite",
                   "--per-dataset", "4")  # fmt: skip
    assert res.code == 0, res.err
    assert f"dataset {TOY}: tasks {TOY}/graded, {TOY}/graded2" in res.out
    bad = tiap_cli("cases", "from-qrels", root, "--db", tmp_path / "y.sqlite",
                   "--group-by", "scene")  # fmt: skip
    assert bad.code == 2
    assert "--group-by must be one of dataset, task (got 'scene')" in bad.err
    assert not (tmp_path / "y.sqlite").exists()
