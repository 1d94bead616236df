"""Contested-credit extraction (DESIGN.md, "cases").

For every (run, query) of a bundle, with the run's ranking cut at ``k``, the
ranks and target sets are those of :class:`tiap.rescore.TargetIndex`, the
index every measure is computed from:

- a memory *counts* only at its first occurrence in the ranking: later
  repeats are dropped and the ranks close up (as in a TREC run file); a
  memory is in the top k when its 1-based rank is at most ``k``;
- a target *gets credit* when at least one of its members is in the top k
  (``hit@k`` = 1 in ``per_query.csv``);
- the pair is **contested** under a :class:`ContestedRule` over named
  targets. The paper's rule as its Section 4.4 reads (:data:`PAPER_RULE`,
  ``--rule both``, the default): no member of target ``raw`` within k, at least
  one of ``source`` and one of ``canonical``; the credited memory is the
  highest-ranked member of ``canonical``. As its Section 3.3 reads
  (:data:`EITHER_RULE`, ``--rule either``): no member of ``raw`` within k, a
  member of ``source`` or of ``canonical`` within k (a query needs Raw and one of
  them non-empty); the credited memory is the highest-ranked member of
  ``canonical`` when one is within k, else of ``source``. So every case of
  ``both`` is a case of ``either``, with the same credited memory and id.

Pairs that cannot be contested are counted, never silently dropped: a query
whose target set is empty for a target the rule names (``empty_target``), and
a query the run has no ranking for (``no_ranking``; it is treated as an empty
ranking, so it cannot be contested either).

``case_id`` is a hash of (dataset, run, query, memory), so extracting the same
bundle twice gives the same ids and the workspace keeps one row per case.

The cases of every run of the bundle at k under the rule are one *bundle
version*, known by its fingerprint (:mod:`tiap.cases.fingerprint`; the definition
hashed with the cases is the dataset, k and the rule), whichever runs are
stored. Extracting a bundle that gives another version into a workspace holding
contested credits of an earlier one is an error naming both, unless
``replace_stale`` (:mod:`tiap.cases.versions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.fingerprint import fingerprint
from tiap.cases.models import (
    RANK_BUCKETS,
    BundleVersion,
    Case,
    EvidenceItem,
    rank_bucket,
    stable_case_id,
)
from tiap.cases.store import now_iso
from tiap.cases.versions import CONTESTED_SCOPE, VersionChange
from tiap.cases.vocab import CONTESTED
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.limits import check_k
from tiap.rescore.target_index import RunIndex, TargetIndex
from tiap.rescore.targets import CANONICAL, RAW, SOURCE
from tiap.traces.bundle import Bundle

#: Bucket names in report order (the paper's strata, then anything past 60).
BUCKET_ORDER: tuple[str, ...] = (*(name for name, _, _ in RANK_BUCKETS), "61+")
#: The bucket only ranks past 60 fall in (left out of the counts when empty).
OVERFLOW_BUCKET = "61+"


@dataclass(frozen=True)
class ContestedRule:
    """When a (run, query) is a contested credit, over named targets.

    Contested: no member of any ``missed`` target within k, and at least one
    member of every ``credited`` target within k (``credit="all"``) or of any of
    them (``credit="any"``). The credited memory is the highest-ranked member of
    ``credit_from`` (one of ``credited``); under ``"any"``, when ``credit_from``
    has none within k, of the first of ``credited`` that has. A query whose set is
    empty for a missed target, or (``"all"``) for any credited target, or
    (``"any"``) for every credited target, cannot be contested.
    """

    missed: tuple[str, ...]
    credited: tuple[str, ...]
    credit_from: str
    credit: str = "all"

    def __post_init__(self) -> None:
        if not self.missed or not self.credited:
            raise TiapError("a contested rule needs a target that misses and one that credits")
        if self.credit_from not in self.credited:
            raise TiapError(
                f"the credited memory comes from '{self.credit_from}', which must be one of "
                f"the crediting targets ({', '.join(self.credited)})"
            )
        both = sorted(set(self.missed) & set(self.credited))
        if both:
            raise TiapError(f"target '{both[0]}' cannot both miss and credit")
        if self.credit not in ("all", "any"):
            raise TiapError(f"credit must be 'all' or 'any' (got {self.credit!r})")

    @property
    def crediting(self) -> tuple[str, ...]:
        """The credited targets in the order the credited memory is looked for."""
        return tuple(dict.fromkeys((self.credit_from, *self.credited)))

    @property
    def targets(self) -> tuple[str, ...]:
        """Every target the rule names: the missed ones, ``credit_from``, the other credited."""
        return tuple(dict.fromkeys((*self.missed, self.credit_from, *self.credited)))


#: The paper's rule (its Section 4.4): Raw misses in the top k while Source and
#: Canonical both give credit.
PAPER_RULE = ContestedRule(missed=(RAW,), credited=(SOURCE, CANONICAL), credit_from=CANONICAL)
#: The paper's Section 3.3 reading: Raw misses in the top k while Source or Canonical
#: gives credit.
EITHER_RULE = ContestedRule(
    missed=(RAW,), credited=(SOURCE, CANONICAL), credit_from=CANONICAL, credit="any"
)
#: ``--rule`` name -> rule (the default first)
RULES: dict[str, ContestedRule] = {"both": PAPER_RULE, "either": EITHER_RULE}
DEFAULT_RULE = "both"
#: ``--rule`` name -> what it means, and where in the paper it comes from
RULE_TEXT: dict[str, str] = {
    "both": "Raw misses in the top k, Source and Canonical both give credit (the paper's 4.4)",
    "either": "Raw misses in the top k, Source or Canonical gives credit (the paper's 3.3)",
}
#: ``--rule`` name -> when a query cannot be contested (its targets)
EMPTY_TEXT: dict[str, str] = {
    "both": "the query's Raw or Canonical target is empty on the run's store",
    # Raw is part of Source: with Raw non-empty, Source is too
    "either": "the query's Raw target is empty on the run's store",
}


def rule_named(name: str, option: str = "--rule") -> ContestedRule:
    """The rule ``name`` stands for; a one-line error for an unknown name."""
    if name not in RULES:
        raise TiapError(f"{option} must be one of {', '.join(RULES)} (got {name!r})")
    return RULES[name]


def rule_name(rule: ContestedRule) -> str | None:
    """The ``--rule`` name of ``rule`` (``None`` for a rule built in Python)."""
    return next((name for name, r in RULES.items() if r == rule), None)


@dataclass(frozen=True)
class Outcomes:
    """What the rule makes of each query of one run (boolean masks in query order; every
    query is in exactly one of the four)."""

    empty_target: np.ndarray
    missed_credited: np.ndarray
    credit_missed: np.ndarray
    contested: np.ndarray


def classify(rule: ContestedRule, ranks: RunIndex, k: int) -> Outcomes:
    """Apply ``rule`` at cut-off ``k`` to every query of one run, through its index."""
    empty = np.zeros(len(ranks.query_ids), dtype=bool)
    for t in rule.missed:
        empty |= ranks.size(t) == 0
    every = rule.credit == "all"
    # "all": any empty credited target rules the query out, "any": only all of them empty
    credited_empty = [ranks.size(t) == 0 for t in rule.credited]
    join = np.logical_or if every else np.logical_and
    empty |= join.reduce(credited_empty)
    any_missed_hit = np.logical_or.reduce([ranks.hit(t, k) for t in rule.missed])
    credits = [ranks.hit(t, k) for t in rule.credited]
    credit_hit = np.logical_and.reduce(credits) if every else np.logical_or.reduce(credits)
    missed_credited = ~empty & any_missed_hit
    credit_missed = ~empty & ~missed_credited & ~credit_hit
    contested = ~empty & ~missed_credited & ~credit_missed
    return Outcomes(empty, missed_credited, credit_missed, contested)


def case_id_for(dataset: str, run: str, query_id: str, memory_id: str) -> str:
    """Stable id of a contested case: ``c-`` and 16 hex digits of a sha256."""
    return stable_case_id("c", dataset, run, query_id, memory_id)


class RunCounts(BaseModel):
    """What happened to one run's queries.

    Under the paper's rule ``raw_credited`` counts queries where Raw gets credit
    and ``canonical_missed`` those where Source or Canonical does not; under
    another rule, those where a missed target gets credit and where a crediting
    target does not.
    """

    model_config = ConfigDict(extra="forbid")

    store: str
    queries: int = 0
    no_ranking: int = 0
    empty_target: int = 0
    raw_credited: int = 0
    canonical_missed: int = 0
    contested: int = 0
    buckets: dict[str, int] = Field(default_factory=dict)


class ExtractReport(BaseModel):
    """Counts of one extraction (also recorded as a ``cases.extract`` event)."""

    model_config = ConfigDict(extra="forbid")

    dataset: str
    k: int
    runs: dict[str, RunCounts]
    buckets: dict[str, int]
    contested: int
    #: the ``--rule`` the cases were extracted under (``None``: a rule built in Python)
    rule: str | None = DEFAULT_RULE
    added: int = 0
    already_present: int = 0
    #: the bundle version of the cases (``None``: not stored, :func:`find_contested`)
    version: VersionChange | None = None


def _cutoff(bundle: Bundle, k: int | None) -> int:
    return check_k("k", bundle.config.k if k is None else k)


def _chosen_runs(bundle: Bundle, runs: Sequence[str] | None) -> list[str]:
    names = list(bundle.config.runs) if runs is None else list(runs)
    unknown = [r for r in names if r not in bundle.config.runs]
    if unknown:
        known = ", ".join(bundle.config.runs) or "none"
        raise TiapError(f"unknown run(s) {', '.join(unknown)} (bundle runs: {known})")
    return names


def check_extract(
    bundle: Bundle, *, k: int | None = None, runs: Sequence[str] | None = None
) -> None:
    """The options of :func:`find_contested` checked against ``bundle`` (the cut-off,
    the run names), so a command can refuse them before it opens a workspace."""
    _cutoff(bundle, k)
    _chosen_runs(bundle, runs)


def _evidence(bundle: Bundle, source_ids: Iterable[str]) -> list[EvidenceItem]:
    items = []
    for sid in dict.fromkeys(source_ids):
        src = bundle.sources[sid]
        items.append(EvidenceItem(source_id=sid, text=src.text, speaker=src.speaker, time=src.time))
    return items


@dataclass(frozen=True)
class _RunView:
    """One run's index read for the rule's targets, as plain lists (query order)."""

    ranks: RunIndex
    sizes: dict[str, list[int]]
    first_ranks: dict[str, list[int]]

    @classmethod
    def of(cls, ranks: RunIndex, rule: ContestedRule) -> _RunView:
        return cls(
            ranks=ranks,
            sizes={t: ranks.size(t).tolist() for t in rule.targets},
            first_ranks={t: ranks.first_rank(t).tolist() for t in rule.targets},
        )


def _case(bundle: Bundle, view: _RunView, rule: ContestedRule, query: int, k: int) -> Case:
    """The contested case of one query of one run: its credited memory and what a rater
    needs to judge it."""
    run, store = view.ranks.run, view.ranks.sets.store
    dataset = bundle.config.dataset
    q = bundle.queries[query]
    rank = next(r for t in rule.crediting if 0 < (r := view.first_ranks[t][query]) <= k)
    memory_id = view.ranks.memory_at(query, rank)
    mem = bundle.memories(store)[memory_id]
    metadata: dict[str, Any] = {"retriever": bundle.run_config(run).retriever}
    metadata |= {f"{t}_target_size": view.sizes[t][query] for t in rule.targets}
    metadata |= {f"first_{t}_rank": view.first_ranks[t][query] or None for t in rule.missed}
    return Case(
        case_id=case_id_for(dataset, run, q.query_id, memory_id),
        dataset=dataset,
        run=run,
        store=store,
        query_id=q.query_id,
        query_index=query,
        question=q.question,
        answer=q.answer,
        category=q.category,
        conversation_id=q.conversation_id,
        evidence=_evidence(bundle, q.evidence),
        memory_id=memory_id,
        memory_text=mem.text,
        memory_source_ids=list(mem.source_ids),
        rank=rank,
        rank_bucket=rank_bucket(rank),
        k=k,
        metadata=metadata,
    )


def _run_counts(ranks: RunIndex, outcomes: Outcomes, cases: Sequence[Case]) -> RunCounts:
    buckets = dict.fromkeys(BUCKET_ORDER, 0)
    for c in cases:
        buckets[c.rank_bucket] += 1
    if not buckets[OVERFLOW_BUCKET]:
        del buckets[OVERFLOW_BUCKET]
    return RunCounts(
        store=ranks.sets.store,
        queries=len(ranks.query_ids),
        no_ranking=int((~ranks.ranked.present).sum()),
        empty_target=int(outcomes.empty_target.sum()),
        raw_credited=int(outcomes.missed_credited.sum()),
        canonical_missed=int(outcomes.credit_missed.sum()),
        contested=len(cases),
        buckets=buckets,
    )


def _report(
    dataset: str, k: int, counts: dict[str, RunCounts], contested: int, rule: str | None
) -> ExtractReport:
    buckets = {b: sum(rc.buckets.get(b, 0) for rc in counts.values()) for b in BUCKET_ORDER}
    if not buckets[OVERFLOW_BUCKET]:
        del buckets[OVERFLOW_BUCKET]
    return ExtractReport(
        dataset=dataset, k=k, runs=counts, buckets=buckets, contested=contested, rule=rule
    )


def find_contested(
    bundle: Bundle,
    *,
    k: int | None = None,
    runs: Sequence[str] | None = None,
    rule: ContestedRule = PAPER_RULE,
) -> tuple[list[Case], ExtractReport]:
    """Every contested (run, query) of ``bundle`` at cut-off ``k`` (default: the bundle's).

    Cases come out ordered by run (bundle order), then query order in ``queries.jsonl``.
    """
    cut = _cutoff(bundle, k)
    names = _chosen_runs(bundle, runs)
    index = TargetIndex(bundle, rule.targets)
    cases: list[Case] = []
    counts: dict[str, RunCounts] = {}
    for run in names:
        ranks = index.run(run)
        outcomes = classify(rule, ranks, cut)
        view = _RunView.of(ranks, rule)
        contested = np.flatnonzero(outcomes.contested).tolist()
        found = [_case(bundle, view, rule, q, cut) for q in contested]
        counts[run] = _run_counts(ranks, outcomes, found)
        cases += found
    return cases, _report(bundle.config.dataset, cut, counts, len(cases), rule_name(rule))


def contested_definition(dataset: str, k: int, rule: ContestedRule) -> dict[str, Any]:
    """What a contested version's fingerprint hashes besides its cases (the rule's
    ``credit`` only when it is not ``all``, so the paper's rule keeps the versions it
    always had)."""
    named: dict[str, Any] = {
        "missed": list(rule.missed),
        "credited": list(rule.credited),
        "credit_from": rule.credit_from,
    }
    if rule.credit != "all":
        named["credit"] = rule.credit
    return {"dataset": dataset, "k": k, "rule": named}


def bundle_version(
    bundle: Bundle, cases: Sequence[Case], k: int, rule: ContestedRule = PAPER_RULE
) -> BundleVersion:
    """The version of ``bundle`` whose contested credits (every run's, at ``k``) are
    ``cases``."""
    definition = contested_definition(bundle.config.dataset, k, rule)
    return BundleVersion(
        scope=CONTESTED_SCOPE,
        fingerprint=fingerprint(CONTESTED, definition, cases),
        kind=CONTESTED,
        source=str(bundle.root) if bundle.root is not None else None,
        definition=definition,
        cases=len(cases),
        created_at=now_iso(),
    )


def extract_cases(
    bundle: Bundle,
    workspace: Workspace,
    *,
    k: int | None = None,
    runs: Sequence[str] | None = None,
    rule: ContestedRule = PAPER_RULE,
    replace_stale: bool = False,
) -> ExtractReport:
    """Find the contested cases of ``bundle`` and add those of ``runs`` (default:
    every run) that are new to ``workspace``.

    Cases already in the workspace (same ``case_id``, same content) are kept as they
    are. The bundle's version is that of every run's cases; a workspace holding
    contested credits of another version raises
    :class:`~tiap.cases.versions.StaleCasesError` unless ``replace_stale``, which
    retires the stale cases and their labels (kept, out of every figure) and stores
    the new version's.
    """
    names = _chosen_runs(bundle, runs)
    every, full = find_contested(bundle, k=k, rule=rule)
    counts = {run: full.runs[run] for run in names}
    chosen = [c for c in every if c.run in counts]
    report = _report(full.dataset, full.k, counts, len(chosen), full.rule)
    version = bundle_version(bundle, every, full.k, rule)
    what = str(bundle.root) if bundle.root is not None else "the bundle"
    with workspace.transaction():
        change = workspace.store_version(
            version,
            every,
            store={c.case_id for c in chosen},
            exclusive=True,
            replace_stale=replace_stale,
            what=what,
        )
        report = report.model_copy(
            update={
                "added": change.added,
                "already_present": change.already_present,
                "version": change,
            }
        )
        payload = report.model_dump(mode="json")
        payload["bundle"] = str(bundle.root) if bundle.root is not None else None
        workspace.record_event("cases.extract", payload)
    return report
