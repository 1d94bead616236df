"""What ``tiap cases from-qrels`` draws "up to N per dataset" from: LMEB's datasets, or
each task (``--group-by dataset|task``), and the draw within one group.

**Groups.** LMEB lays its tasks out as ``MemoryType/Dataset/Task`` (a dataset's tasks
share the dataset's corpus, one level up: ``Dialogue/LoCoMo/single_hop`` and
``Dialogue/LoCoMo/multi_hop`` are tasks of the dataset ``Dialogue/LoCoMo``). With
``group_by`` ``dataset`` (the default, LMEB's "up to 100 per dataset"), a task of a
tree whose path under the tree has three parts or more belongs to the dataset its
first two parts name; a shorter path, a single task directory or a trace bundle is a
dataset of its own. With ``task`` every task is a group of its own.

**The draw in a group** is the rule of :mod:`tiap.cases.from_qrels` over the group's
pairs together: the strata are the grades over every task of the group, a query is
a (task, query) pair, queries in task order then file order, and each query's pairs
are shuffled with ``random.Random("SEED|TASK|GRADE|QUERY")`` (``TASK`` the task's
name, so a group of one task draws what it drew before groups were).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from tiap.cases.qrels_source import QrelsSource, QrelsTask, TaskRun
from tiap.cases.sample import evenly_spaced, largest_remainder
from tiap.cases.vocab import ANNOTATED, NEGATIVE
from tiap.errors import TiapError

GroupBy = Literal["dataset", "task"]
GROUP_BY: tuple[GroupBy, ...] = ("dataset", "task")
DEFAULT_GROUP_BY: GroupBy = "dataset"
NEGATIVE_STRATUM = "negative"


def check_group_by(name: str, value: object) -> GroupBy:
    """``dataset`` or ``task``; otherwise a one-line :class:`TiapError` naming ``name``."""
    for g in GROUP_BY:
        if value == g:
            return g
    raise TiapError(f"{name} must be one of {', '.join(GROUP_BY)} (got {value!r})")


def grade_stratum(grade: int) -> str:
    return f"grade {grade}"


@dataclass(frozen=True)
class QrelsGroup:
    """One group the draw takes up to ``per_dataset`` pairs from: its name (recorded as
    each drawn case's dataset) and its tasks, in source order."""

    name: str
    tasks: list[QrelsTask]

    @property
    def memory_type(self) -> str | None:
        types = {t.memory_type for t in self.tasks}
        return types.pop() if len(types) == 1 else None


def dataset_of(source: QrelsSource, task: QrelsTask, group_by: GroupBy) -> str:
    """The group ``task`` belongs to (see the module doc)."""
    parts = PurePosixPath(task.dataset).parts
    if group_by == "dataset" and source.kind == "tree" and len(parts) >= 3:
        return "/".join(parts[:2])
    return task.dataset


def groups_of(source: QrelsSource, group_by: GroupBy) -> list[QrelsGroup]:
    """The source's tasks in groups, in the order each group's first task comes."""
    check_group_by("group_by", group_by)
    out: dict[str, list[QrelsTask]] = {}
    for task in source.tasks:
        out.setdefault(dataset_of(source, task, group_by), []).append(task)
    return [QrelsGroup(name, tasks) for name, tasks in out.items()]


@dataclass(frozen=True)
class Pick:
    """A drawn pair: of task ``task`` (its index in the group), query and document."""

    query_id: str
    doc_id: str
    grade: int | None
    stratum: str
    pair: str
    rank: int | None = None
    task: int = 0

    @property
    def key(self) -> tuple[int, str, str]:
        return (self.task, self.query_id, self.doc_id)


def _rounds(groups: Sequence[Sequence[Pick]], take: int) -> list[Pick]:
    """Round r = every group's r-th item (groups in order); whole rounds while they
    fit, then evenly spaced positions of the last one."""
    out: list[Pick] = []
    depth = max((len(g) for g in groups), default=0)
    for r in range(depth):
        if len(out) >= take:
            break
        row = [g[r] for g in groups if len(g) > r]
        left = take - len(out)
        out += row if len(row) <= left else [row[p] for p in evenly_spaced(len(row), left)]
    return out


def sample_annotated(
    group: QrelsGroup, per_dataset: int, seed: int
) -> tuple[list[Pick], dict[str, int], dict[str, int]]:
    """The annotated pairs drawn by the rule, the strata sizes and the allocation."""
    by_grade: dict[int, dict[tuple[int, str], list[str]]] = {}
    for ti, task in enumerate(group.tasks):
        for q in task.queries:
            for did, grade in task.qrels.get(q.query_id, {}).items():
                by_grade.setdefault(grade, {}).setdefault((ti, q.query_id), []).append(did)
    grades = sorted(by_grade, reverse=True)
    sizes = {grade_stratum(g): sum(len(d) for d in by_grade[g].values()) for g in grades}
    allocation = largest_remainder(sizes, min(per_dataset, sum(sizes.values())))
    picks: list[Pick] = []
    for g in grades:
        stratum = grade_stratum(g)
        groups = []
        for ti, task in enumerate(group.tasks):
            for q in task.queries:
                docs = list(by_grade[g].get((ti, q.query_id), []))
                random.Random(f"{seed}|{task.dataset}|{g}|{q.query_id}").shuffle(docs)
                groups.append([Pick(q.query_id, d, g, stratum, ANNOTATED, task=ti) for d in docs])
        picks += _rounds([grp for grp in groups if grp], allocation[stratum])
    return picks, sizes, allocation


def sample_negatives(
    group: QrelsGroup, runs: Sequence[TaskRun], n: int, drawn: set[tuple[int, str, str]]
) -> tuple[list[Pick], int]:
    """Up to ``n`` top-ranked documents without a positive grade over the group's tasks
    (``runs``: each task's), and the pool size."""
    groups = []
    for ti, (task, run) in enumerate(zip(group.tasks, runs, strict=True)):
        for q in task.queries:
            grades = task.qrels.get(q.query_id, {})
            pool = [
                Pick(q.query_id, did, grades.get(did), NEGATIVE_STRATUM, NEGATIVE, rank, ti)
                for rank, did in enumerate(run.rankings.get(q.query_id, []), start=1)
                if grades.get(did, 0) <= 0 and (ti, q.query_id, did) not in drawn
            ]
            if pool:
                groups.append(pool)
    return _rounds(groups, n), sum(len(g) for g in groups)
