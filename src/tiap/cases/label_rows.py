"""The labels of a workspace: append-only rows, the latest per (case, rater) wins,
and one rater namespace (a name is a judge or a human, never both).

The namespace is enforced on every write (:meth:`LabelStore.add_labels` refuses a
row whose rater already has labels of the other kind) and checked on the reads
that feed figures (:meth:`LabelStore.latest_labels`, :meth:`LabelStore.raters`):
a workspace where an earlier tiap let a judge and a human share a name is an
error naming the way out, :meth:`LabelStore.rename_rater`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime

from tiap.cases.models import LabelMark, LabelRecord
from tiap.cases.rows import LABEL_MARKS, LABELS
from tiap.cases.store import chunks, label_stamp, marks
from tiap.cases.versions import VersionStore
from tiap.cases.vocab import (
    ADJUDICATED,
    HUMAN,
    JUDGE,
    ORIGIN_RETRACT,
    RETRACTED,
    RaterKind,
    kind_noun,
    other_kind,
)
from tiap.errors import TiapError

RENAME_EVENT = "rater.rename"


def _insert_labels(rows: int) -> str:
    return LABELS.insert_sql("INSERT OR IGNORE", rows)


class LabelStore(VersionStore):
    """Label rows and raters (the base of :class:`~tiap.cases.workspace.Workspace`)."""

    _namespace_checked = False
    #: (transaction serial, rater, kind) checked by :meth:`_check_kind`
    _kinds_checked: AbstractSet[tuple[int, str, str]] = frozenset()

    # ------------------------------------------------------------------- writes

    def add_label(self, record: LabelRecord) -> int:
        """Append one label row; returns its id. Commits unless in a transaction."""
        return self.add_labels([record])[0]

    def add_labels(self, records: Iterable[LabelRecord]) -> list[int]:
        """Append label rows in one transaction. Rows whose ``external_id`` is already
        stored are skipped (id ``-1``), so imports are idempotent. A row whose rater
        has labels of the other kind is refused (TiapError), and the batch with it."""
        ids: list[int] = []
        sql = LABELS.insert_sql("INSERT OR IGNORE")
        batch = list(records)
        with self.transaction():
            kinds: dict[str, RaterKind] = {}
            for rec in batch:
                seen = kinds.get(rec.rater)
                if seen is None:
                    self._check_kind(rec.rater, rec.rater_kind)
                    kinds[rec.rater] = rec.rater_kind
                elif seen != rec.rater_kind:
                    raise TiapError(
                        f"{self.path}: rater '{rec.rater}' appears both as judge and as human "
                        "in one batch of labels (a name is a judge or a human, never both)"
                    )
                if rec.created_at is None:
                    after = self._latest_stamp(rec.case_id, rec.rater)
                    rec = rec.model_copy(update={"created_at": label_stamp(after)})
                try:
                    cur = self._conn.execute(sql, LABELS.values(rec))
                except sqlite3.IntegrityError:
                    raise TiapError(
                        f"{self.path}: cannot label case '{rec.case_id}': no such case "
                        "in the workspace"
                    ) from None
                ids.append(int(cur.lastrowid or 0) if cur.rowcount else -1)
        return ids

    def append_labels(self, records: Sequence[LabelRecord]) -> None:
        """Append label rows, as :meth:`add_labels` does (the same checks, in one
        transaction), with multi-row statements and without their ids: what a
        judge run stores for a group of calls."""
        if not records:
            return
        created = label_stamp()
        at = LABELS.insert_fields.index("created_at")
        rows = []
        with self.transaction():
            kinds: dict[str, RaterKind] = {}
            for rec in records:
                if kinds.setdefault(rec.rater, rec.rater_kind) != rec.rater_kind:
                    raise TiapError(
                        f"{self.path}: rater '{rec.rater}' appears both as judge and as human "
                        "in one batch of labels (a name is a judge or a human, never both)"
                    )
                row = LABELS.values(rec)
                if row[at] is None:
                    row[at] = created
                rows.append(row)
            for rater, kind in kinds.items():
                self._check_kind(rater, kind)
            try:
                self._insert_rows(_insert_labels, rows)
            except sqlite3.IntegrityError:
                missing = self._missing_cases([r.case_id for r in records])
                raise TiapError(
                    f"{self.path}: cannot label case '{missing}': no such case in the workspace"
                ) from None

    def _latest_stamp(self, case_id: str, rater: str) -> str | None:
        """The time of the latest stored label of (case, rater), if any and readable."""
        row = self._one(
            "SELECT created_at FROM labels WHERE case_id = ? AND rater = ? ORDER BY id DESC "
            "LIMIT 1",
            (case_id, rater),
        )
        stamp = None if row is None else row[0]
        try:
            return stamp if isinstance(stamp, str) and datetime.fromisoformat(stamp) else None
        except ValueError:
            return None

    def _missing_cases(self, case_ids: Sequence[str]) -> str:
        """The first of ``case_ids`` the workspace has no case of ("?" if none)."""
        known: set[str] = set()
        for chunk in chunks(sorted(set(case_ids))):
            rows = self._all(
                f"SELECT case_id FROM cases WHERE case_id IN ({marks(len(chunk))})", chunk
            )
            known.update(r[0] for r in rows)
        return next((c for c in case_ids if c not in known), "?")

    def retract_label(self, case_id: str, rater: str, *, note: str | None = None) -> int:
        """Withdraw a human rater's current label on a case (a new ``retracted`` row)."""
        return self.add_label(
            LabelRecord(
                case_id=case_id,
                rater=rater,
                rater_kind=HUMAN,
                label=None,
                reason=RETRACTED,
                note=note,
                origin=ORIGIN_RETRACT,
            )
        )

    # -------------------------------------------------------------------- reads

    def label_history(
        self, case_id: str, rater: str | None = None, *, include_retired: bool = False
    ) -> list[LabelRecord]:
        """Every live row for a case (optionally one rater), oldest first; rows
        retired with their case version are left out unless ``include_retired``."""
        sql, args = "SELECT * FROM labels WHERE case_id = ?", [case_id]
        if not include_retired:
            sql += f" AND {self._live_labels()}"
        if rater is not None:
            sql += " AND rater = ?"
            args.append(rater)
        return LABELS.load_all(self._all(sql + " ORDER BY id", args))

    def latest_labels(
        self,
        *,
        case_ids: Iterable[str] | None = None,
        raters: Iterable[str] | None = None,
        rater_kind: RaterKind | None = None,
        include_retracted: bool = False,
    ) -> list[LabelRecord]:
        """The latest row per (case, rater), ordered by case then rater.

        Labels retired with their case version are left out, always. Retracted
        human labels are left out (the case counts as unlabelled by that rater)
        unless ``include_retracted``; invalid judge labels (``label`` None) are kept:
        they are abstentions. Every filter runs in SQL (long case lists
        in chunks). A rater name used by a judge and a human raises TiapError.
        """
        self._require_one_namespace()
        where: list[str] = [self._live_labels()]
        args: list[object] = []
        if rater_kind is not None:
            where.append("rater_kind = ?")
            args.append(rater_kind)
        if raters is not None:
            names = list(dict.fromkeys(raters))
            if not names:
                return []
            where.append(f"rater IN ({marks(len(names))})")
            args.extend(names)
        outer, outer_args = "", []
        if not include_retracted:
            outer = " WHERE NOT (l.label IS NULL AND COALESCE(l.reason, '') = ?)"
            outer_args = [RETRACTED]

        def query(extra: list[str], extra_args: Sequence[object]) -> list[sqlite3.Row]:
            conds = where + extra
            inner = "SELECT MAX(id) AS id FROM labels"
            if conds:
                inner += " WHERE " + " AND ".join(conds)
            sql = (
                f"SELECT l.* FROM labels l JOIN ({inner} GROUP BY case_id, rater) m "
                f"ON l.id = m.id{outer} ORDER BY l.case_id, l.rater"
            )
            return self._all(sql, [*args, *extra_args, *outer_args])

        if case_ids is None:
            return LABELS.load_all(query([], []))
        wanted = sorted(set(case_ids))
        rows: list[sqlite3.Row] = []
        for chunk in chunks(wanted):
            rows += query([f"case_id IN ({marks(len(chunk))})"], chunk)
        return LABELS.load_all(rows)  # chunks are in case order, each by case then rater

    def latest_judge_labels(
        self, raters: Sequence[str], rubric_hash: str
    ) -> dict[tuple[str, str], LabelMark]:
        """The latest live judge label under a rubric hash per (case_id, rater), for
        the given judges, without its texts (what tells whether a judgment is done)."""
        names = list(dict.fromkeys(raters))
        if not names:
            return {}
        sql = (
            f"SELECT {LABEL_MARKS.select('l')} FROM labels l JOIN ("
            "SELECT MAX(id) AS id FROM labels WHERE rater_kind = ? AND rubric_hash = ? "
            f"AND {self._live_labels()} "
            f"AND rater IN ({marks(len(names))}) GROUP BY case_id, rater) m ON l.id = m.id"
        )
        out: dict[tuple[str, str], LabelMark] = {}
        for row in self._all(sql, [JUDGE, rubric_hash, *names]):
            mark = LABEL_MARKS.load(row)
            out[(mark.case_id, mark.rater)] = mark
        return out

    # ------------------------------------------------------------------- raters

    def raters(self, rater_kind: RaterKind | None = None) -> list[str]:
        """Rater names with live labels (of one kind), sorted."""
        self._require_one_namespace()
        sql, args = f"SELECT DISTINCT rater FROM labels WHERE {self._live_labels()}", []
        if rater_kind is not None:
            sql += " AND rater_kind = ?"
            args.append(rater_kind)
        return [r[0] for r in self._all(sql + " ORDER BY rater", args)]

    def rater_kinds(self, name: str) -> set[RaterKind]:
        """The kinds a rater name has labels as: empty (unused), one, or (in a
        workspace an earlier tiap wrote) both."""
        row = self._one(
            "SELECT EXISTS(SELECT 1 FROM labels WHERE rater = ? AND rater_kind = ?), "
            "EXISTS(SELECT 1 FROM labels WHERE rater = ? AND rater_kind = ?)",
            (name, JUDGE, name, HUMAN),
        )
        found: set[RaterKind] = set()
        if row is not None and row[0]:
            found.add(JUDGE)
        if row is not None and row[1]:
            found.add(HUMAN)
        return found

    def require_rater_kind(self, name: str, kind: RaterKind, *, hint: str | None = None) -> None:
        """Refuse (TiapError) a rater name the workspace already uses for the other
        kind of rater, or the reserved name ``adjudicated`` for a judge."""
        if name == ADJUDICATED and kind != HUMAN:
            raise TiapError(
                f"the rater name '{ADJUDICATED}' is reserved for adjudicated human labels; "
                f"pick another name for the {kind_noun(kind)}"
            )
        found = self.rater_kinds(name)
        if len(found) > 1:
            raise self._clash_error([name])
        if found and kind not in found:
            more = f" ({hint})" if hint else ""
            raise TiapError(
                f"{self.path}: '{name}' is the name of a {kind_noun(other_kind(kind))} in this "
                f"workspace (a name is a judge or a human, never both); pick another name "
                f"for the {kind_noun(kind)}{more}"
            )

    def _check_kind(self, name: str, kind: RaterKind) -> None:
        """The write-time check (one indexed look-up per rater and transaction)."""
        checked = (self.serial, name, kind)
        if self.in_transaction and checked in self._kinds_checked:
            return
        if name == ADJUDICATED and kind != HUMAN:
            self.require_rater_kind(name, kind)
        row = self._one(
            "SELECT 1 FROM labels WHERE rater = ? AND rater_kind = ? LIMIT 1",
            (name, other_kind(kind)),
        )
        if row is not None:
            self.require_rater_kind(name, kind)
        if self.in_transaction:
            now = {k for k in self._kinds_checked if k[0] == self.serial}
            self._kinds_checked = now | {checked}

    def rater_clashes(self) -> list[str]:
        """Rater names with labels both as judge and as human (only an earlier tiap
        could write them); each must be renamed with :meth:`rename_rater`."""
        return [
            r[0]
            for r in self._all(
                "SELECT rater FROM labels GROUP BY rater "
                "HAVING MIN(rater_kind) != MAX(rater_kind) ORDER BY rater"
            )
        ]

    def _clash_error(self, names: Sequence[str]) -> TiapError:
        shown = ", ".join(f"'{n}'" for n in names)
        return TiapError(
            f"{self.path}: rater name(s) {shown} have labels both as judge and as human "
            "(a name is a judge or a human, never both), so their labels cannot be told "
            f"apart; rename the judge's labels with 'tiap cases rename-rater {names[0]} NEW "
            f"--kind judge --db {self.path}' (Workspace.rename_rater) and the judge in its panel"
        )

    def _require_one_namespace(self) -> None:
        if self._namespace_checked:
            return
        clashes = self.rater_clashes()
        if clashes:
            raise self._clash_error(clashes)
        self._namespace_checked = True

    def rename_rater(self, old: str, new: str, kind: RaterKind) -> int:
        """Give the labels of one rater (``old`` of kind ``kind``) the name ``new``, a
        name the workspace does not use yet; recorded as a ``rater.rename`` event.
        Returns the number of label rows renamed. This is how a workspace where a
        judge and a human share a name is repaired (rename the judge's labels)."""
        new = new.strip()
        if not new:
            raise TiapError("give a non-empty new rater name")
        if ADJUDICATED in (old, new):
            raise TiapError(f"the rater name '{ADJUDICATED}' is reserved; it cannot be renamed")
        with self.transaction():
            if kind not in self.rater_kinds(old):
                raise TiapError(f"{self.path}: no labels by the {kind_noun(kind)} '{old}'")
            if self.rater_kinds(new):
                raise TiapError(
                    f"{self.path}: the rater name '{new}' is in use already; pick an unused one"
                )
            cur = self._conn.execute(
                "UPDATE labels SET rater = ? WHERE rater = ? AND rater_kind = ?", (new, old, kind)
            )
            renamed = int(cur.rowcount)
            self.record_event(
                RENAME_EVENT, {"old": old, "new": new, "kind": kind, "labels": renamed}
            )
        self._namespace_checked = False
        return renamed
