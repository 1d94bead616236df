"""One rubric version per report: every figure counts labels made under one rubric
hash, the judges'.

A rubric's content hash changes with any edit, so two versions of a rubric (the
same id, a label redefined) give labels that mean different things. The report's
hash (:func:`figures_rubric_hash`) is the hash of the judges' labels: the judges
among the named raters, else every judge in the table; without judges, every
rater's. When those labels carry several hashes, it is the report rubric's hash
if that is one of them, else an error naming them. When no label says its hash
(a labels file without a ``rubric_hash`` column), nothing is filtered.

:func:`one_rubric_version` then leaves out every label made under another hash
(a label that names no hash is kept: its version is unknown), counts per rater
what it left out, and drops the raters with no label left. A rater named as a
rater, a voter or the reference with no label left is an error: it cannot be
compared. The report notes what was left out, and the gate fails when the human
labels in scope were all made under another version (:mod:`tiap.agreement.gate`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from tiap.agreement.label_table import LabelEntry, LabelTable, RaterInfo
from tiap.cases.vocab import HUMAN, JUDGE
from tiap.errors import TiapError
from tiap.rubric import Rubric


@dataclass(frozen=True)
class VersionScope:
    """Which labels the report's figures count, and what was left out."""

    #: the figures' rubric hash (``None``: the labels do not say; nothing filtered)
    rubric_hash: str | None = None
    #: the rubric id of the labels under that hash (or the report's rubric)
    rubric_id: str | None = None
    #: whose labels decided the hash: ``judges'`` or ``labels'``
    whose: str = "judges'"
    #: rater -> labels left out (made under another hash)
    left_out: dict[str, int] = field(default_factory=dict)
    #: rater -> the hashes of the labels left out
    other_hashes: dict[str, list[str]] = field(default_factory=dict)
    #: rater -> the rubric ids of the labels left out
    other_ids: dict[str, list[str]] = field(default_factory=dict)
    #: raters none of whose labels is left
    dropped: list[str] = field(default_factory=list)
    #: human raters with labels in scope before and after the filter
    humans_before: list[str] = field(default_factory=list)
    humans_after: list[str] = field(default_factory=list)

    @property
    def humans_only_elsewhere(self) -> bool:
        """The scope held human labels, and none of them is under the figures' hash."""
        return bool(self.humans_before) and not self.humans_after

    def hashes_of(self, raters: Collection[str]) -> list[str]:
        return sorted({h for r in raters for h in self.other_hashes.get(r, [])})

    def ids_of(self, raters: Collection[str]) -> list[str]:
        return sorted({i for r in raters for i in self.other_ids.get(r, [])})


def _short(hashes: Sequence[str]) -> str:
    return ", ".join(h[:12] for h in hashes)


def figures_rubric_hash(
    table: LabelTable, rubric: Rubric | None, raters: Sequence[str] | None = None
) -> tuple[str | None, str]:
    """(the hash every figure counts labels of, whose labels decided it): see the
    module doc."""
    named = set(raters) if raters is not None else None
    pool = [r for r in table.raters if named is None or r.name in named]
    judges = [r for r in pool if r.kind == JUDGE]
    deciding, whose = (judges, "judges'") if judges else (pool, "labels'")
    hashes = sorted({h for r in deciding for h in r.rubric_hashes})
    if not hashes:
        return None, whose
    if len(hashes) == 1:
        return hashes[0], whose
    if rubric is not None and rubric.content_hash in hashes:
        return rubric.content_hash, whose
    which = f"rubric {rubric.id} ({rubric.content_hash[:12]})" if rubric else "no rubric"
    raise TiapError(
        f"the {whose} labels were made under several rubric versions (hashes "
        f"{_short(hashes)}) and the report's is {which}: pass the version to report on "
        "with --rubric"
    )


def _narrowed(info: RaterInfo, ids: set[str], hashes: set[str]) -> RaterInfo:
    return info.model_copy(update={"rubric_ids": sorted(ids), "rubric_hashes": sorted(hashes)})


@dataclass
class _Split:
    """A table's labels split by rubric hash: those kept (the target's, or without a
    hash) with each rater's rubric ids and hashes among them, and those left out,
    counted per rater with the other ids and hashes they were made under."""

    kept: list[LabelEntry] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)
    ids: dict[str, set[str]] = field(default_factory=dict)
    hashes: dict[str, set[str]] = field(default_factory=dict)
    other_ids: dict[str, set[str]] = field(default_factory=dict)
    other_hashes: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, table: LabelTable, target: str) -> _Split:
        split = cls()
        for e in table.labels:
            if e.rubric_hash is None or e.rubric_hash == target:
                split._keep(e)
            else:
                split._leave_out(e, e.rubric_hash)
        return split

    def _keep(self, e: LabelEntry) -> None:
        self.kept.append(e)
        if e.rubric_id is not None:
            self.ids.setdefault(e.rater, set()).add(e.rubric_id)
        if e.rubric_hash is not None:
            self.hashes.setdefault(e.rater, set()).add(e.rubric_hash)

    def _leave_out(self, e: LabelEntry, rubric_hash: str) -> None:
        self.left_out[e.rater] += 1
        self.other_hashes.setdefault(e.rater, set()).add(rubric_hash)
        if e.rubric_id is not None:
            self.other_ids.setdefault(e.rater, set()).add(e.rubric_id)

    def first_id(self) -> str | None:
        """The first rubric id (sorted) among the kept labels, if any."""
        return next(iter(sorted({i for v in self.ids.values() for i in v})), None)

    def narrowed(self, raters: list[RaterInfo], dropped: list[str]) -> list[RaterInfo]:
        """The raters that keep a label, those with labels left out narrowed to the
        rubric ids and hashes they keep."""
        return [
            _narrowed(r, self.ids.get(r.name, set()), self.hashes.get(r.name, set()))
            if r.name in self.left_out
            else r
            for r in raters
            if r.name not in dropped
        ]


def _require_named(
    split: _Split, named_dropped: list[str], whose: str, rubric_id: str | None, target: str
) -> None:
    """A rater the caller named must keep a label: else an error naming its rubric."""
    if not named_dropped:
        return
    name = named_dropped[0]
    theirs = ", ".join(sorted(split.other_ids.get(name, ()))) or "?"
    raise TiapError(
        f"rater '{name}' has no label under the {whose} rubric {rubric_id or '?'} "
        f"({target[:12]}): its {split.left_out[name]} label(s) were made under rubric "
        f"{theirs} ({_short(sorted(split.other_hashes.get(name, ())))})"
    )


def one_rubric_version(
    table: LabelTable,
    rubric: Rubric | None,
    *,
    raters: Sequence[str] | None = None,
    named: Collection[str] = (),
) -> tuple[LabelTable, VersionScope]:
    """The table with only the labels of the figures' rubric hash (see the module
    doc; the caller's table is unchanged), and what was left out. ``raters``: the
    included raters as named (``None``: the default); ``named``: every rater the
    caller named (raters, voters, the reference), which must keep a label."""
    labelled = {e.rater for e in table.labels}
    humans_before = [r.name for r in table.raters if r.kind == HUMAN and r.name in labelled]
    target, whose = figures_rubric_hash(table, rubric, raters)
    if target is None:
        return table, VersionScope(
            whose=whose, humans_before=humans_before, humans_after=humans_before
        )
    split = _Split.of(table, target)
    with_labels = {e.rater for e in split.kept}
    dropped = [
        r.name for r in table.raters if r.name in split.left_out and r.name not in with_labels
    ]
    rubric_id = rubric.id if rubric is not None else split.first_id()
    _require_named(split, [n for n in dropped if n in set(named)], whose, rubric_id, target)
    infos = split.narrowed(table.raters, dropped)
    scope = VersionScope(
        rubric_hash=target,
        rubric_id=rubric_id,
        whose=whose,
        left_out=dict(sorted(split.left_out.items())),
        other_hashes={r: sorted(h) for r, h in sorted(split.other_hashes.items())},
        other_ids={r: sorted(i) for r, i in sorted(split.other_ids.items())},
        dropped=dropped,
        humans_before=humans_before,
        humans_after=[r.name for r in infos if r.kind == HUMAN and r.name in with_labels],
    )
    if not split.left_out:
        return table, scope
    return table.model_copy(update={"raters": infos, "labels": split.kept}), scope


def version_notes(scope: VersionScope) -> list[str]:
    """The report's notes on the labels left out (one for the raters left out
    entirely, one per rater left out in part)."""
    if not scope.left_out or scope.rubric_hash is None:
        return []
    mine = f"not the {scope.whose} {scope.rubric_id or '?'} ({scope.rubric_hash[:12]})"
    notes = []
    if scope.dropped:
        total = sum(scope.left_out[r] for r in scope.dropped)
        notes.append(
            f"left out rater(s) {', '.join(scope.dropped)}: their {total} label(s) were made "
            f"under another rubric or rubric version ({_short(scope.hashes_of(scope.dropped))}), "
            f"{mine}; every figure counts labels of one rubric version"
        )
    for rater, n in scope.left_out.items():
        if rater not in scope.dropped:
            notes.append(
                f"left out {n} label(s) of rater {rater}: made under another rubric or rubric "
                f"version ({_short(scope.other_hashes[rater])}), {mine}"
            )
    return notes
