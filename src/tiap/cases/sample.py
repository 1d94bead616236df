"""Stratified validation subsets of contested cases, with a reviewer overlap.

The rule (``RULE`` below, recorded in every subset's params):

1. **Pool.** Every case in the workspace, or only those of ``from_runs``.
   Strata are the rank buckets (``1-5``, ``6-20``, ``21-60``, then ``61+``).
   Inside a stratum, cases are ordered by (run, query index, case id).
2. **Allocation.** Proportional to stratum size with largest-remainder
   rounding: stratum b of size N_b in a pool of N gets floor(n * N_b / N)
   cases, and the n - sum(floor) cases left over go one each to the strata
   with the largest remainders n * N_b / N - floor(...), ties to the earlier
   bucket. If the pool has no more than n cases, every case is taken.
3. **Selection.** In a stratum of N_b cases that gets n_b, the cases at
   0-based positions floor((i + 0.5) * N_b / n_b), i = 0 .. n_b - 1, are
   taken: evenly spaced by (run, query index), deterministic, no seed needed.
4. **Overlap.** The cases a second reviewer also labels are allocated over
   the strata of the *subset* by the same largest-remainder rule, and inside
   each stratum drawn at random with ``random.Random(seed)`` (strata visited
   in bucket order, each draw over that stratum's cases in subset order). The
   seed therefore changes the overlap only, never the subset.

The subset is stored in order of (run, query index, case id), so it reads
the same way in every tool.

A subset holds cases of one kind. For ``qrels`` pairs the strata are (dataset,
sampling stratum): the dataset, then the qrels grade (highest first) or
``negative`` (a sampled unjudged document), so every dataset and grade is
represented in proportion; everything else is the same rule. For ``answer`` cases
(a run's generated answers) the strata are (run, question type), so every run and
question type is represented in proportion.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.extract import BUCKET_ORDER
from tiap.cases.models import Case
from tiap.cases.vocab import ANSWER, CASE_KINDS, CONTESTED, QRELS, SUBSET_VALIDATION, CaseKind
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.limits import check_cases, check_seed

RULE = (
    "strata=rank_bucket; allocation=proportional, largest remainder (ties to the earlier "
    "bucket); within a stratum ordered by (run, query_index, case_id) take positions "
    "floor((i + 0.5) * N_b / n_b); overlap: same allocation over the subset, drawn per "
    "stratum with random.Random(seed)"
)

QRELS_RULE = (
    "strata=(dataset, qrels grade highest first, then negative); allocation=proportional, "
    "largest remainder (ties to the earlier stratum); within a stratum ordered by (run, "
    "query_index, case_id) take positions floor((i + 0.5) * N_b / n_b); overlap: same "
    "allocation over the subset, drawn per stratum with random.Random(seed)"
)
ANSWER_RULE = (
    "strata=(run, question type); allocation=proportional, largest remainder (ties to the "
    "earlier stratum); within a stratum ordered by (run, query_index, case_id) take "
    "positions floor((i + 0.5) * N_b / n_b); overlap: same allocation over the subset, "
    "drawn per stratum with random.Random(seed)"
)
#: the rule of a validation subset of each kind of case
RULES: dict[str, str] = {CONTESTED: RULE, QRELS: QRELS_RULE, ANSWER: ANSWER_RULE}
STRATUM_SEPARATOR = " · "

DEFAULT_N = 115
DEFAULT_OVERLAP = 36
DEFAULT_SEED = 1337


class SampleResult(BaseModel):
    """A drawn subset: its case ids in stored order, the overlap, and the counts."""

    model_config = ConfigDict(extra="forbid")

    name: str
    case_ids: list[str]
    overlap_ids: list[str]
    pool_size: int
    allocation: dict[str, int]
    overlap_allocation: dict[str, int]
    params: dict[str, object] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


def default_overlap(n: int) -> int:
    """The paper's overlap share (36 of 115), scaled to ``n`` and rounded half up."""
    n = check_cases("--n", n)
    return (2 * DEFAULT_OVERLAP * n + DEFAULT_N) // (2 * DEFAULT_N)


def _bucket_key(bucket: str) -> int:
    return BUCKET_ORDER.index(bucket) if bucket in BUCKET_ORDER else len(BUCKET_ORDER)


def stratum(case: Case) -> str:
    """A case's stratum: its rank bucket, for a qrels pair ``DATASET · STRATUM``, for
    an answer ``RUN · QUESTION TYPE``."""
    if case.kind == QRELS:
        return f"{case.dataset}{STRATUM_SEPARATOR}{case.rank_bucket}"
    if case.kind == ANSWER:
        return f"{case.run}{STRATUM_SEPARATOR}{case.rank_bucket}"
    return case.rank_bucket


def stratum_order(name: str) -> tuple[object, ...]:
    """The design order of a stratum named as :func:`stratum` names it: rank buckets
    in bucket order, then qrels strata by dataset and grade (highest first), then any
    other name."""
    if name in BUCKET_ORDER:
        return (0, BUCKET_ORDER.index(name))
    dataset, sep, bucket = name.partition(STRATUM_SEPARATOR)
    if sep:
        return (1, dataset, *_grade_key(bucket), bucket)
    return (2, name)


def _grade_key(bucket: str) -> tuple[int, int]:
    """``grade 2`` before ``grade 1`` before ``grade 0``, then anything else."""
    head, _, number = bucket.partition(" ")
    if head == "grade" and number.lstrip("-").isdigit():
        return (0, -int(number))
    return (1, 0)


def _stratum_key(case: Case) -> tuple[object, ...]:
    if case.kind == ANSWER:
        return (case.run, case.rank_bucket)
    if case.kind == QRELS:
        return (case.dataset, *_grade_key(case.rank_bucket), case.rank_bucket)
    return (_bucket_key(case.rank_bucket),)


def largest_remainder(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Split ``n`` over strata proportionally to ``sizes`` (Hamilton's method).

    Strata keep the order of ``sizes``; remainder ties go to the earlier stratum.
    Never gives a stratum more than its size; ``n`` must not exceed the total.
    """
    total = sum(sizes.values())
    if n > total:
        raise TiapError(f"cannot draw {n} cases from {total}")
    if total == 0 or n == 0:
        return dict.fromkeys(sizes, 0)
    # Exact integer arithmetic: quota_b = n * N_b / total.
    floors = {b: (n * size) // total for b, size in sizes.items()}
    left = n - sum(floors.values())
    order = sorted(
        enumerate(sizes.items()),
        key=lambda item: (-((n * item[1][1]) % total), item[0]),
    )
    for _, (b, _size) in order[:left]:
        floors[b] += 1
    return floors


def evenly_spaced(size: int, take: int) -> list[int]:
    """0-based positions floor((i + 0.5) * size / take) for i in 0 .. take - 1."""
    if take > size:
        raise TiapError(f"cannot take {take} positions from {size}")
    return [math.floor((2 * i + 1) * size / (2 * take)) for i in range(take)]


def _order(case: Case) -> tuple[str, int, str]:
    return (case.run, case.query_index, case.case_id)


def _strata(cases: Sequence[Case]) -> dict[str, list[Case]]:
    strata: dict[str, list[Case]] = {}
    for c in sorted(cases, key=lambda c: (_stratum_key(c), *_order(c))):
        strata.setdefault(stratum(c), []).append(c)
    return strata


def stratified_sample(
    cases: Sequence[Case],
    *,
    name: str,
    n: int = DEFAULT_N,
    overlap: int = DEFAULT_OVERLAP,
    seed: int = DEFAULT_SEED,
) -> SampleResult:
    """Draw a subset of ``cases`` by the module's rule (pure: nothing is stored)."""
    n = check_cases("--n", n)
    overlap = check_cases("--overlap", overlap, minimum=0)
    seed = check_seed("--seed", seed)
    if overlap > n:
        raise TiapError(f"--overlap ({overlap}) cannot exceed --n ({n})")
    notes: list[str] = []
    if not cases:
        raise TiapError("no cases to sample from (run 'tiap cases extract' first)")
    strata = _strata(cases)
    pool = len(cases)
    take = n
    if pool <= n:
        if pool < n:
            notes.append(f"the pool has only {pool} cases (fewer than n={n}): taking all")
        take = pool
    allocation = largest_remainder({b: len(cs) for b, cs in strata.items()}, take)
    chosen: dict[str, list[Case]] = {}
    for b, cs in strata.items():
        chosen[b] = [cs[p] for p in evenly_spaced(len(cs), allocation[b])]

    n_overlap = overlap
    if overlap > take:
        notes.append(f"overlap reduced from {overlap} to {take} (the size of the subset)")
        n_overlap = take
    overlap_alloc = largest_remainder({b: len(cs) for b, cs in chosen.items()}, n_overlap)
    rng = random.Random(seed)
    overlap_ids: set[str] = set()
    for b, cs in chosen.items():
        overlap_ids.update(c.case_id for c in rng.sample(cs, overlap_alloc[b]))

    subset = sorted((c for cs in chosen.values() for c in cs), key=_order)
    case_ids = [c.case_id for c in subset]
    return SampleResult(
        name=name,
        case_ids=case_ids,
        overlap_ids=[cid for cid in case_ids if cid in overlap_ids],
        pool_size=pool,
        allocation=allocation,
        overlap_allocation=overlap_alloc,
        notes=notes,
    )


def _pool_kind(workspace: Workspace, kind: CaseKind | None) -> CaseKind:
    """The kind of case to draw: ``kind``, or the one kind the workspace holds."""
    present = workspace.case_kinds()
    if kind is not None:
        if kind not in CASE_KINDS:
            raise TiapError(f"--kind: give one of {', '.join(CASE_KINDS)} (not '{kind}')")
        if not present.get(kind):
            held = ", ".join(f"{n} {k}" for k, n in present.items()) or "none"
            raise TiapError(f"no cases of kind '{kind}' in {workspace.path} (it holds: {held})")
        return kind
    if len(present) > 1:
        held = ", ".join(f"{n} {k}" for k, n in present.items())
        raise TiapError(
            f"{workspace.path} holds cases of several kinds ({held}): a subset holds one "
            "kind, choose it with --kind"
        )
    return next((k for k in CASE_KINDS if k in present), CONTESTED)


def sample_subset(
    workspace: Workspace,
    *,
    name: str,
    n: int = DEFAULT_N,
    overlap: int = DEFAULT_OVERLAP,
    seed: int = DEFAULT_SEED,
    from_runs: Sequence[str] | None = None,
    replace: bool = False,
    kind: CaseKind | None = None,
) -> SampleResult:
    """Draw a validation subset from the workspace's cases and store it as ``name``.

    The subset holds cases of one kind: ``kind``, or the kind the workspace holds (a
    workspace holding both kinds needs ``kind``)."""
    n = check_cases("--n", n)
    overlap = check_cases("--overlap", overlap, minimum=0)
    seed = check_seed("--seed", seed)
    if not name.strip():
        raise TiapError("the subset needs a name (--name)")
    runs = sorted(set(from_runs)) if from_runs else None
    case_kind = _pool_kind(workspace, kind) if workspace.count_cases() else kind
    if overlap > n:
        raise TiapError(f"--overlap ({overlap}) cannot exceed --n ({n})")
    cases = workspace.cases(kind=case_kind)
    if runs is not None:
        known = sorted({c.run for c in cases})
        unknown = [r for r in runs if r not in known]
        if unknown:
            raise TiapError(
                f"no cases from run(s) {', '.join(unknown)} in {workspace.path} "
                f"(runs with cases: {', '.join(known) or 'none'})"
            )
        cases = [c for c in cases if c.run in runs]
    result = stratified_sample(cases, name=name, n=n, overlap=overlap, seed=seed)
    params = validation_params(result, n, overlap, seed, runs, case_kind)
    with workspace.transaction():
        workspace.save_subset(
            name, result.case_ids, overlap=result.overlap_ids, params=params, replace=replace
        )
        workspace.record_event("cases.sample", {"name": name, **params})
    return result.model_copy(update={"params": params})


def validation_params(
    result: SampleResult,
    n: int,
    overlap: int,
    seed: int,
    runs: list[str] | None,
    case_kind: CaseKind | None,
) -> dict[str, Any]:
    """What a validation subset records of its draw (``subsets.params``): the options,
    the rule of its case kind (``case_kind`` recorded for qrels pairs and answers) and
    what the draw gave."""
    params: dict[str, Any] = {
        "kind": SUBSET_VALIDATION,
        "n": n,
        "overlap": overlap,
        "seed": seed,
        "from_runs": runs,
        "rule": RULES[case_kind or CONTESTED],
        "pool_size": result.pool_size,
        "size": len(result.case_ids),
        "overlap_size": len(result.overlap_ids),
        "allocation": result.allocation,
        "overlap_allocation": result.overlap_allocation,
        "notes": result.notes,
    }
    if case_kind in (QRELS, ANSWER):
        params["case_kind"] = case_kind
    return params


def check_replace(ws: Workspace, name: str, *, replace: bool, force: bool) -> None:
    """An existing subset is replaced only with ``--replace``, and one whose cases
    have labels only with ``--force`` too (the labels stay on their cases). A stale
    subset (its cases' bundle version was replaced) needs ``--replace`` only."""
    if name not in ws.subsets():
        return
    stale = ws.subset_is_stale(name)
    if not replace:
        why = " (it is stale: its cases' bundle version was replaced)" if stale else ""
        raise TiapError(
            f"{ws.path}: subset '{name}' exists already{why}: choose another --name, or "
            "draw it again with --replace"
        )
    if stale:
        return
    ids = ws.case_ids(subset=name)
    labelled = len({lab.case_id for lab in ws.latest_labels(case_ids=ids)})
    if labelled and not force:
        raise TiapError(
            f"{ws.path}: subset '{name}' has labels on {labelled} of its {len(ids)} cases: "
            "add --force to replace it anyway (the labels stay on their cases; report on "
            "the new subset again, as a gate recorded on the old one is not re-evaluated)"
        )
