"""Annotated (query, document) pairs as cases of kind ``qrels`` (``tiap cases
from-qrels``): the LMEB procedure of auditing relevance labels with a judge panel
and manual spot checks.

The rule (``RULE`` below, recorded with the stored subset):

1. **Pool.** Per dataset (see :mod:`tiap.cases.qrels_source`), every qrels line
   (query, document, grade). Strata are the grades, highest first.
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

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.fingerprint import fingerprint
from tiap.cases.models import QRELS_RUN, BundleVersion, Case
from tiap.cases.qrels_source import (
    QrelsQuery,
    QrelsSource,
    QrelsTask,
    TaskRun,
    read_source,
    task_run,
)
from tiap.cases.sample import evenly_spaced, largest_remainder
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
NEGATIVE_STRATUM = "negative"


def qrels_case_id(dataset: str, query_id: str, doc_id: str) -> str:
    """Stable id of a qrels case: ``q-`` and 16 hex digits of a sha256."""
    key = json.dumps([dataset, query_id, doc_id], ensure_ascii=False)
    return "q-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def grade_stratum(grade: int) -> str:
    return f"grade {grade}"


class DatasetCounts(BaseModel):
    """What one dataset gave."""

    model_config = ConfigDict(extra="forbid")

    memory_type: str | None
    path: str
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
    datasets: dict[str, DatasetCounts]
    cases: int
    added: int = 0
    already_present: int = 0
    notes: list[str] = Field(default_factory=list)
    #: the draw's version (``None``: not stored, :func:`qrels_cases`)
    version: VersionChange | None = None


@dataclass(frozen=True)
class _Pick:
    query_id: str
    doc_id: str
    grade: int | None
    stratum: str
    pair: str
    rank: int | None = None


def _rounds(groups: Sequence[Sequence[_Pick]], take: int) -> list[_Pick]:
    """Round r = every group's r-th item (groups in order); whole rounds while they
    fit, then evenly spaced positions of the last one."""
    out: list[_Pick] = []
    depth = max((len(g) for g in groups), default=0)
    for r in range(depth):
        if len(out) >= take:
            break
        row = [g[r] for g in groups if len(g) > r]
        left = take - len(out)
        out += row if len(row) <= left else [row[p] for p in evenly_spaced(len(row), left)]
    return out


def sample_annotated(
    task: QrelsTask, per_dataset: int, seed: int
) -> tuple[list[_Pick], dict[str, int], dict[str, int]]:
    """The annotated pairs drawn by the rule, the strata sizes and the allocation."""
    by_grade: dict[int, dict[str, list[str]]] = {}
    for q in task.queries:
        for did, grade in task.qrels.get(q.query_id, {}).items():
            by_grade.setdefault(grade, {}).setdefault(q.query_id, []).append(did)
    grades = sorted(by_grade, reverse=True)
    sizes = {grade_stratum(g): sum(len(d) for d in by_grade[g].values()) for g in grades}
    allocation = largest_remainder(sizes, min(per_dataset, sum(sizes.values())))
    picks: list[_Pick] = []
    for g in grades:
        stratum = grade_stratum(g)
        groups = []
        for q in task.queries:
            docs = list(by_grade[g].get(q.query_id, []))
            random.Random(f"{seed}|{task.dataset}|{g}|{q.query_id}").shuffle(docs)
            groups.append([_Pick(q.query_id, d, g, stratum, ANNOTATED) for d in docs])
        picks += _rounds([grp for grp in groups if grp], allocation[stratum])
    return picks, sizes, allocation


def sample_negatives(
    task: QrelsTask, run: TaskRun, n: int, drawn: set[tuple[str, str]]
) -> tuple[list[_Pick], int]:
    """Up to ``n`` top-ranked documents without a positive grade (and the pool size)."""
    groups = []
    for q in task.queries:
        grades = task.qrels.get(q.query_id, {})
        group = [
            _Pick(q.query_id, did, grades.get(did), NEGATIVE_STRATUM, NEGATIVE, rank)
            for rank, did in enumerate(run.rankings.get(q.query_id, []), start=1)
            if grades.get(did, 0) <= 0 and (q.query_id, did) not in drawn
        ]
        if group:
            groups.append(group)
    return _rounds(groups, n), sum(len(g) for g in groups)


def _case(
    task: QrelsTask,
    pick: _Pick,
    query: QrelsQuery,
    query_index: int,
    run: TaskRun | None,
    ranks: dict[str, dict[str, int]],
) -> Case:
    q = query
    doc = task.docs[pick.doc_id]
    rank = pick.rank if pick.rank is not None else ranks.get(pick.query_id, {}).get(pick.doc_id)
    meta: dict[str, Any] = {"source": str(task.path)}
    if run is not None:
        meta["ranked_by"] = run.name
    return Case(
        case_id=qrels_case_id(task.dataset, pick.query_id, pick.doc_id),
        kind=QRELS,
        dataset=task.dataset,
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


def qrels_cases(
    source: QrelsSource,
    *,
    per_dataset: int = DEFAULT_PER_DATASET,
    seed: int = DEFAULT_SEED,
    negatives: int = 0,
    run: str | None = None,
    subset: str = DEFAULT_SUBSET,
) -> tuple[list[Case], QrelsImportReport]:
    """The cases the rule draws from ``source`` (pure: nothing is stored), in subset
    order: per dataset, the annotated pairs, then the negatives."""
    check_options(per_dataset, seed, negatives, run)
    cases: list[Case] = []
    datasets: dict[str, DatasetCounts] = {}
    notes: list[str] = []
    offset = 0
    for task in source.tasks:
        index = {q.query_id: offset + i for i, q in enumerate(task.queries)}
        offset += len(task.queries)
        ranked = task_run(task, run) if run else None
        picks, sizes, allocation = sample_annotated(task, per_dataset, seed)
        drawn = {(p.query_id, p.doc_id) for p in picks}
        negs: list[_Pick] = []
        pool = 0
        if ranked is not None:
            negs, pool = sample_negatives(task, ranked, negatives, drawn)
            if not ranked.rankings:
                notes.append(f"{task.dataset}: run {ranked.name} ranks none of its queries")
        if not picks:
            notes.append(f"{task.dataset}: no qrels line to draw from")
        ranks = (
            {q: {d: r for r, d in enumerate(docs, start=1)} for q, docs in ranked.rankings.items()}
            if ranked is not None
            else {}
        )
        order = sorted(picks, key=lambda p: (index[p.query_id], -(p.grade or 0), p.doc_id))
        order += sorted(negs, key=lambda p: (index[p.query_id], p.rank or 0))
        queries = {q.query_id: q for q in task.queries}
        cases += [
            _case(task, p, queries[p.query_id], index[p.query_id], ranked, ranks) for p in order
        ]
        datasets[task.dataset] = DatasetCounts(
            memory_type=task.memory_type,
            path=str(task.path),
            queries=len(task.queries),
            documents=len(task.docs),
            qrels_lines=task.qrels_lines,
            strata=sizes,
            allocation=allocation,
            sampled=len(picks),
            queries_sampled=len({p.query_id for p in picks}),
            run=ranked.name if ranked is not None else None,
            queries_ranked=len(ranked.rankings) if ranked is not None else 0,
            negatives_pool=pool,
            negatives=len(negs),
        )
    report = QrelsImportReport(
        source=str(source.path),
        source_kind=source.kind,
        subset=subset,
        per_dataset=per_dataset,
        seed=seed,
        negatives=negatives,
        run=run,
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
) -> tuple[list[Case], QrelsImportReport]:
    """The pairs :func:`from_qrels` stores, drawn and checked without a workspace (a
    bad option, an unreadable run or no pair at all is an error here, before a
    workspace is opened or created)."""
    if not subset.strip():
        raise TiapError("the subset needs a name (--name)")
    src = source if isinstance(source, QrelsSource) else read_source(source)
    cases, report = qrels_cases(
        src, per_dataset=per_dataset, seed=seed, negatives=negatives, run=run, subset=subset
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
    )
    return store_qrels(workspace, cases, report, replace=replace, replace_stale=replace_stale)
