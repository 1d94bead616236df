"""Annotated (query, document) pairs as cases of kind ``qrels`` (``tiap cases
from-qrels``): the LMEB procedure of auditing relevance labels with a judge panel
and manual spot checks.

The rule (``RULE`` below, recorded with the stored subset):

1. **Pool.** Per dataset (``group_by``: LMEB's dataset, its tasks together, or each
   task; see :mod:`tiap.cases.qrels_groups`, recorded with the subset and in the
   version's definition), every qrels line (query, document, grade). Strata are the
   grades, highest first. A drawn case's ``dataset`` is its group (the agreement
   report groups by it), its ``metadata["task"]`` the task when that differs.
2. **Allocation.** Up to ``per_dataset`` pairs, split over the grades in
   proportion to their sizes with largest-remainder rounding (ties to the higher
   grade), as the validation subsets are (:func:`tiap.cases.sample.largest_remainder`).
3. **Spread over queries.** In a stratum, each query's pairs are put in an order
   drawn from ``random.Random("SEED|DATASET|GRADE|QUERY")``; round r holds every
   query's r-th pair, queries in file order. Whole rounds are taken while they fit;
   of the last round, the pairs at positions floor((i + 0.5) * R / m) (R pairs in
   the round, m still to take). So every query gets its share before any query
   gets another pair.
4. **Negatives** (``negatives`` N with a run): per dataset, up to N documents the
   run ranks for a query while the qrels give them no positive grade (no line, or
   grade 0), not already drawn in 1-3: round r holds every query's r-th best such
   document, taken by the same rule. They are the check for missing labels.

A pair's case id is ``q-`` and 16 hex digits of a sha256 of (dataset, query id,
document id), so the same pair is one case however often it is drawn. The pairs
drawn are stored as a subset of kind ``qrels-sample`` with the parameters and the
allocation; drawing again with the same source and parameters changes nothing.

A draw is a version of its subset (scope ``qrels:NAME``), known by its
fingerprint (:mod:`tiap.cases.fingerprint`; the definition hashed with the pairs
is ``per_dataset``, ``seed`` and ``negatives``). A drawn pair stored with other
content (the source changed: a document's text, a query, a grade) is stale: an
error naming both versions, unless ``replace_stale``, which retires the stored
version and its labels and draws the subset again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.fingerprint import fingerprint
from tiap.cases.models import QRELS_RUN, BundleVersion, Case, stable_case_id
from tiap.cases.qrels_groups import (
    DEFAULT_GROUP_BY,
    NEGATIVE_STRATUM,
    GroupBy,
    Pick,
    QrelsGroup,
    check_group_by,
    groups_of,
    sample_annotated,
    sample_negatives,
)
from tiap.cases.qrels_source import (
    QrelsQuery,
    QrelsSource,
    TaskRun,
    read_source,
    task_run,
)
from tiap.cases.store import now_iso
from tiap.cases.versions import VersionChange, qrels_scope
from tiap.cases.vocab import ANNOTATED, NEGATIVE, QRELS, SUBSET_QRELS_SAMPLE
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.limits import check_cases, check_seed

RULE = (
    "per dataset: strata = qrels grades (highest first); allocation of per_dataset pairs "
    "proportional, largest remainder (ties to the higher grade); within a stratum each "
    "query's pairs in an order drawn with random.Random('SEED|DATASET|GRADE|QUERY'), round "
    "r = every query's r-th pair in query order, whole rounds while they fit, then positions "
    "floor((i + 0.5) * R / m) of the last round; negatives: the run's r-th best document "
    "without a positive grade per query, by the same rounds"
)

DEFAULT_PER_DATASET = 100
DEFAULT_SEED = 1337
DEFAULT_SUBSET = "qrels"
EVENT = "cases.from_qrels"


def qrels_case_id(dataset: str, query_id: str, doc_id: str) -> str:
    """Stable id of a qrels case: ``q-`` and 16 hex digits of a sha256."""
    return stable_case_id("q", dataset, query_id, doc_id)


class DatasetCounts(BaseModel):
    """What one dataset gave."""

    model_config = ConfigDict(extra="forbid")

    memory_type: str | None
    path: str
    #: the tasks drawn from together (``--group-by dataset``: LMEB's dataset's tasks)
    tasks: list[str] = Field(default_factory=list)
    queries: int
    documents: int
    qrels_lines: int
    #: annotated pairs per grade stratum, and how many of each were drawn
    strata: dict[str, int]
    allocation: dict[str, int]
    sampled: int
    queries_sampled: int
    run: str | None = None
    queries_ranked: int = 0
    negatives_pool: int = 0
    negatives: int = 0


class QrelsImportReport(BaseModel):
    """Counts of one ``from-qrels`` (also recorded as a ``cases.from_qrels`` event)."""

    model_config = ConfigDict(extra="forbid")

    source: str
    source_kind: str
    subset: str
    subset_status: str = "created"
    per_dataset: int
    seed: int
    negatives: int
    run: str | None
    #: what a dataset is: LMEB's dataset (its tasks together) or each task
    group_by: GroupBy = DEFAULT_GROUP_BY
    datasets: dict[str, DatasetCounts]
    cases: int
    added: int = 0
    already_present: int = 0
    notes: list[str] = Field(default_factory=list)
    #: the draw's version (``None``: not stored, :func:`qrels_cases`)
    version: VersionChange | None = None


def _case(
    group: QrelsGroup,
    pick: Pick,
    query: QrelsQuery,
    query_index: int,
    run: TaskRun | None,
    ranks: dict[str, dict[str, int]],
) -> Case:
    task = group.tasks[pick.task]
    q = query
    doc = task.docs[pick.doc_id]
    rank = pick.rank if pick.rank is not None else ranks.get(pick.query_id, {}).get(pick.doc_id)
    meta: dict[str, Any] = {"source": str(task.path)}
    if group.name != task.dataset:
        meta["task"] = task.dataset
    if run is not None:
        meta["ranked_by"] = run.name
    return Case(
        case_id=qrels_case_id(task.dataset, pick.query_id, pick.doc_id),
        kind=QRELS,
        dataset=group.name,
        run=run.name if pick.pair == NEGATIVE and run is not None else QRELS_RUN,
        store="",
        query_id=pick.query_id,
        query_index=query_index,
        question=q.text,
        answer=q.answer,
        category=q.category,
        conversation_id=q.scene,
        evidence=[],
        memory_id=pick.doc_id,
        memory_text=doc.text,
        memory_source_ids=[],
        rank=rank,
        rank_bucket=pick.stratum,
        metadata=meta,
        title=doc.title,
        grade=pick.grade,
        pair=ANNOTATED if pick.pair == ANNOTATED else NEGATIVE,
        memory_type=task.memory_type,
    )


def check_options(per_dataset: int, seed: int, negatives: int, run: str | None) -> None:
    """The draw's options (one-line errors naming them as the command line does)."""
    check_cases("--per-dataset", per_dataset)
    check_cases("--negatives", negatives, minimum=0)
    check_seed("--seed", seed)
    if negatives and not run:
        raise TiapError("--negatives N needs --run RUN (the run whose top documents are drawn)")
    if run and not negatives:
        raise TiapError("--run is where --negatives N draws from: give --negatives too")


def _group_counts(
    group: QrelsGroup,
    picks: list[Pick],
    sizes: dict[str, int],
    allocation: dict[str, int],
    runs: list[TaskRun] | None,
    negs: tuple[list[Pick], int],
) -> DatasetCounts:
    tasks = group.tasks
    paths = [str(t.path) for t in tasks]
    docs: set[str] = set()
    for t in tasks:
        docs |= set(t.docs)
    return DatasetCounts(
        memory_type=group.memory_type,
        path=paths[0] if len(paths) == 1 else os.path.commonpath(paths),
        tasks=[t.dataset for t in tasks],
        queries=sum(len(t.queries) for t in tasks),
        documents=len(docs),
        qrels_lines=sum(t.qrels_lines for t in tasks),
        strata=sizes,
        allocation=allocation,
        sampled=len(picks),
        queries_sampled=len({(p.task, p.query_id) for p in picks}),
        run=runs[0].name if runs else None,
        queries_ranked=sum(len(r.rankings) for r in runs) if runs else 0,
        negatives_pool=negs[1],
        negatives=len(negs[0]),
    )


def _query_index(group: QrelsGroup, offset: int) -> dict[tuple[int, str], int]:
    """(task, query) -> its index in the source (``offset``: the group's first)."""
    index: dict[tuple[int, str], int] = {}
    for ti, task in enumerate(group.tasks):
        for q in task.queries:
            index[(ti, q.query_id)] = offset + len(index)
    return index


def _negatives(
    group: QrelsGroup, runs: list[TaskRun], negatives: int, picks: list[Pick]
) -> tuple[tuple[list[Pick], int], list[str]]:
    """The group's negatives and pool size, and a note per task its run ranks none of."""
    negs = sample_negatives(group, runs, negatives, {p.key for p in picks})
    notes = [
        f"{t.dataset}: run {r.name} ranks none of its queries"
        for t, r in zip(group.tasks, runs, strict=True)
        if not r.rankings
    ]
    return negs, notes


def _group_cases(
    group: QrelsGroup, offset: int, seed: int, per_dataset: int, negatives: int, run: str | None
) -> tuple[list[Case], DatasetCounts, list[str]]:
    """One group's drawn cases (annotated pairs, then negatives), counts and notes;
    ``offset``: the index of the group's first query in the source."""
    index = _query_index(group, offset)
    runs = [task_run(t, run) for t in group.tasks] if run else None
    picks, sizes, allocation = sample_annotated(group, per_dataset, seed)
    negs: tuple[list[Pick], int] = ([], 0)
    notes: list[str] = []
    if runs is not None:
        negs, notes = _negatives(group, runs, negatives, picks)
    if not picks:
        notes.append(f"{group.name}: no qrels line to draw from")
    ranks = [
        {q: {d: r for r, d in enumerate(docs, start=1)} for q, docs in tr.rankings.items()}
        for tr in runs or []
    ]
    order = sorted(picks, key=lambda p: (index[(p.task, p.query_id)], -(p.grade or 0), p.doc_id))
    order += sorted(negs[0], key=lambda p: (index[(p.task, p.query_id)], p.rank or 0))
    queries = [{q.query_id: q for q in t.queries} for t in group.tasks]
    cases = [
        _case(
            group,
            p,
            queries[p.task][p.query_id],
            index[(p.task, p.query_id)],
            runs[p.task] if runs else None,
            ranks[p.task] if ranks else {},
        )
        for p in order
    ]
    return cases, _group_counts(group, picks, sizes, allocation, runs, negs), notes


def qrels_cases(
    source: QrelsSource,
    *,
    per_dataset: int = DEFAULT_PER_DATASET,
    seed: int = DEFAULT_SEED,
    negatives: int = 0,
    run: str | None = None,
    subset: str = DEFAULT_SUBSET,
    group_by: GroupBy = DEFAULT_GROUP_BY,
) -> tuple[list[Case], QrelsImportReport]:
    """The cases the rule draws from ``source`` (pure: nothing is stored), in subset
    order: per dataset (``group_by``: LMEB's datasets or each task, see
    :mod:`tiap.cases.qrels_groups`), the annotated pairs, then the negatives."""
    check_options(per_dataset, seed, negatives, run)
    check_group_by("group_by", group_by)
    cases: list[Case] = []
    datasets: dict[str, DatasetCounts] = {}
    notes: list[str] = []
    offset = 0
    for group in groups_of(source, group_by):
        drawn, counts, said = _group_cases(group, offset, seed, per_dataset, negatives, run)
        offset += counts.queries
        cases += drawn
        datasets[group.name] = counts
        notes += said
    report = QrelsImportReport(
        source=str(source.path),
        source_kind=source.kind,
        subset=subset,
        per_dataset=per_dataset,
        seed=seed,
        negatives=negatives,
        run=run,
        group_by=group_by,
        datasets=datasets,
        cases=len(cases),
        notes=notes,
    )
    return cases, report


def _params(report: QrelsImportReport) -> dict[str, Any]:
    return {
        "kind": SUBSET_QRELS_SAMPLE,
        "source": report.source,
        "source_kind": report.source_kind,
        "per_dataset": report.per_dataset,
        "seed": report.seed,
        "negatives": report.negatives,
        "run": report.run,
        "group_by": report.group_by,
        "rule": RULE,
        "size": report.cases,
        "allocation": {
            ds: {**c.allocation, **({NEGATIVE_STRATUM: c.negatives} if c.run else {})}
            for ds, c in report.datasets.items()
        },
        "pool": {
            ds: {**c.strata, **({NEGATIVE_STRATUM: c.negatives_pool} if c.run else {})}
            for ds, c in report.datasets.items()
        },
    }


def qrels_version(report: QrelsImportReport, cases: Sequence[Case]) -> BundleVersion:
    """The version of subset ``report.subset`` whose drawn pairs are ``cases``."""
    definition = {
        "per_dataset": report.per_dataset,
        "seed": report.seed,
        "negatives": report.negatives,
        "group_by": report.group_by,
    }
    return BundleVersion(
        scope=qrels_scope(report.subset),
        fingerprint=fingerprint(QRELS, definition, cases),
        kind=QRELS,
        source=report.source,
        definition=definition,
        cases=len(cases),
        created_at=now_iso(),
    )


def draw_qrels(
    source: str | Path | QrelsSource,
    *,
    per_dataset: int = DEFAULT_PER_DATASET,
    seed: int = DEFAULT_SEED,
    negatives: int = 0,
    run: str | None = None,
    subset: str = DEFAULT_SUBSET,
    group_by: GroupBy = DEFAULT_GROUP_BY,
) -> tuple[list[Case], QrelsImportReport]:
    """The pairs :func:`from_qrels` stores, drawn and checked without a workspace (a
    bad option, an unreadable run or no pair at all is an error here, before a
    workspace is opened or created)."""
    if not subset.strip():
        raise TiapError("the subset needs a name (--name)")
    src = source if isinstance(source, QrelsSource) else read_source(source)
    cases, report = qrels_cases(
        src,
        per_dataset=per_dataset,
        seed=seed,
        negatives=negatives,
        run=run,
        subset=subset,
        group_by=group_by,
    )
    if not cases:
        raise TiapError(f"{src.path}: no qrels pair to draw (every qrels file is empty)")
    return cases, report


def store_qrels(
    workspace: Workspace,
    cases: list[Case],
    report: QrelsImportReport,
    *,
    replace: bool = False,
    replace_stale: bool = False,
) -> QrelsImportReport:
    """Add drawn pairs (:func:`draw_qrels`) to ``workspace`` as the subset the report
    names; see :func:`from_qrels`."""
    subset = report.subset
    params = _params(report)
    ids = [c.case_id for c in cases]
    version = qrels_version(report, cases)
    with workspace.transaction():
        status, drawn = "created", None
        if subset in workspace.subsets():
            record = workspace.subset(subset)
            drawn = record.bundle_fingerprint
            same = (
                workspace.case_ids(subset=subset, include_stale=True) == ids
                and record.params == params
            )
            if not same and not (replace or replace_stale):
                raise TiapError(
                    f"{workspace.path}: subset '{subset}' exists and holds other pairs or "
                    "was drawn with other parameters (choose another --name, or --replace)"
                )
            status = "unchanged" if same else "replaced"
        change = workspace.store_version(
            version,
            cases,
            exclusive=False,
            replace_stale=replace_stale,
            what=str(report.source),
        )
        if status == "unchanged" and (change.retired or workspace.subset_is_stale(subset)):
            status = "replaced"  # the same pairs, with the source's new content
        if status != "unchanged" or drawn != version.fingerprint:
            # (an unchanged subset an earlier tiap drew records its version now)
            workspace.save_subset(subset, ids, params=params, replace=True)
        report = report.model_copy(
            update={
                "added": change.added,
                "already_present": change.already_present,
                "subset_status": status,
                "version": change,
            }
        )
        workspace.record_event(EVENT, report.model_dump(mode="json"))
    return report


def from_qrels(
    source: str | Path | QrelsSource,
    workspace: Workspace,
    *,
    per_dataset: int = DEFAULT_PER_DATASET,
    seed: int = DEFAULT_SEED,
    negatives: int = 0,
    run: str | None = None,
    subset: str = DEFAULT_SUBSET,
    replace: bool = False,
    replace_stale: bool = False,
    group_by: GroupBy = DEFAULT_GROUP_BY,
) -> QrelsImportReport:
    """Draw qrels pairs from ``source`` (a path or a read source), add the new cases to
    ``workspace`` and store them as the subset ``subset`` (kind ``qrels-sample``).

    A subset of that name holding the same pairs drawn with the same parameters from
    the same content is left as it is (``subset_status`` ``unchanged``); one that
    differs is an error unless ``replace``. A drawn pair stored with other content
    raises :class:`~tiap.cases.versions.StaleCasesError` unless ``replace_stale``
    (which also replaces the subset). To create a workspace only for valid input, draw first
    (:func:`draw_qrels`), then open it and :func:`store_qrels`."""
    cases, report = draw_qrels(
        source,
        per_dataset=per_dataset,
        seed=seed,
        negatives=negatives,
        run=run,
        subset=subset,
        group_by=group_by,
    )
    return store_qrels(workspace, cases, report, replace=replace, replace_stale=replace_stale)
