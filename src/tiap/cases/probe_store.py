"""Probe judgments and frozen anchor sets: rows kept apart from the audit's labels.

- **Probe labels** (``probe_labels``): a judge's label made under a probe (a
  perturbed prompt, a repeat, a drift run's re-judgment), with the probe's kind,
  variant and parameters. Append-only like the labels; a probe judgment is known
  by its (case, judge, request hash): every probe variant sends its own request.
  No read of the audit's labels (:mod:`tiap.cases.label_rows`) touches this table,
  so probes never enter an agreement, majority, prevalence or gate figure. A probe
  label's rater is a judge: the rater namespace is checked as for every label.
- **Anchor sets** (``anchor_sets``, ``anchor_cases``, ``anchor_labels``): frozen
  once, in one transaction, and never changed (the schema's triggers refuse any
  update or delete); a name is taken once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from tiap.cases.label_rows import LabelStore
from tiap.cases.probe_models import AnchorCase, AnchorLabel, AnchorSet, ProbeLabelRecord
from tiap.cases.rows import ANCHOR_CASES, ANCHOR_LABELS, ANCHOR_SETS, PROBE_LABELS
from tiap.cases.store import chunks, marks, now_iso
from tiap.cases.vocab import JUDGE
from tiap.errors import TiapError

__all__ = ["ProbeStore"]


class ProbeStore(LabelStore):
    """Probe labels and anchor sets (a base of :class:`~tiap.cases.workspace.Workspace`)."""

    # ------------------------------------------------------------ probe labels

    def _require_probe_tables(self) -> bool:
        """Whether the schema has them (a read-only workspace may predate them)."""
        return self._has_table("probe_labels")

    def max_probe_label_id(self) -> int:
        """The newest probe label's id (0 for none): a probe run's label epoch."""
        if not self._require_probe_tables():
            return 0
        row = self._one("SELECT COALESCE(MAX(id), 0) FROM probe_labels")
        return int(row[0]) if row is not None else 0

    def probe_labels_since(
        self, rater: str, rubric_hash: str, case_ids: Iterable[str], since_id: int
    ) -> set[tuple[str, str]]:
        """(case_id, request_hash) of the rater's probe labels under the rubric with an
        id above ``since_id``, for the given cases."""
        out: set[tuple[str, str]] = set()
        for chunk in chunks(sorted(set(case_ids))):
            rows = self._all(
                "SELECT case_id, request_hash FROM probe_labels WHERE rater = ? AND id > ? "
                f"AND rubric_hash = ? AND case_id IN ({marks(len(chunk))})",
                [rater, since_id, rubric_hash, *chunk],
            )
            out.update((r[0], r[1]) for r in rows if r[1] is not None)
        return out

    def add_probe_labels(self, records: Iterable[ProbeLabelRecord]) -> list[int]:
        """Append probe label rows in one transaction; their raters must be judges (a
        name used by a human is refused, as for every label)."""
        ids: list[int] = []
        created = now_iso()
        sql = PROBE_LABELS.insert_sql()
        with self.transaction():
            for rec in records:
                if rec.rater_kind != JUDGE:
                    raise TiapError(f"probe label by '{rec.rater}': only judges are probed")
                self._check_kind(rec.rater, JUDGE)
                if rec.created_at is None:
                    rec = rec.model_copy(update={"created_at": created})
                try:
                    cur = self._conn.execute(sql, PROBE_LABELS.values(rec))
                except sqlite3.IntegrityError:
                    raise TiapError(
                        f"{self.path}: cannot store a probe label on case '{rec.case_id}': no "
                        "such case in the workspace"
                    ) from None
                ids.append(int(cur.lastrowid or 0))
        return ids

    def latest_probe_labels(
        self, rater: str, request_hashes: Iterable[str]
    ) -> dict[tuple[str, str], ProbeLabelRecord]:
        """The rater's latest probe label per (case_id, request_hash), for the given
        request hashes (a probe judgment is known by its request)."""
        out: dict[tuple[str, str], ProbeLabelRecord] = {}
        if not self._require_probe_tables():
            return out
        for chunk in chunks(sorted(set(request_hashes))):
            rows = self._all(
                f"SELECT {PROBE_LABELS.select('p')} FROM probe_labels p JOIN ("
                "SELECT MAX(id) AS id FROM probe_labels WHERE rater = ? AND request_hash IN "
                f"({marks(len(chunk))}) GROUP BY case_id, request_hash) m ON p.id = m.id",
                [rater, *chunk],
            )
            for record in PROBE_LABELS.load_all(rows):
                out[(record.case_id, str(record.request_hash))] = record
        return out

    def probe_label_count(self, *, kind: str | None = None, drift_run: int | None = None) -> int:
        """How many probe label rows there are (of one kind, of one drift run)."""
        if not self._require_probe_tables():
            return 0
        sql = "SELECT COUNT(*) FROM probe_labels WHERE 1"
        args: list[str | int] = []
        if kind is not None:
            sql += " AND probe_kind = ?"
            args.append(kind)
        if drift_run is not None:
            sql += " AND drift_run = ?"
            args.append(drift_run)
        row = self._one(sql, args)
        return int(row[0]) if row is not None else 0

    # ------------------------------------------------------------ anchor sets

    def freeze_anchor_set(
        self, anchor: AnchorSet, cases: Sequence[AnchorCase], labels: Sequence[AnchorLabel]
    ) -> None:
        """Record a frozen anchor set, its cases and its labels in one transaction; a
        name taken already is an error (a frozen set is never changed)."""
        wrong = {c.anchor for c in cases} | {lab.anchor for lab in labels}
        if wrong - {anchor.name}:
            raise TiapError(f"anchor rows of another set than '{anchor.name}'")
        with self.transaction():
            if self._one("SELECT 1 FROM anchor_sets WHERE name = ?", (anchor.name,)):
                raise TiapError(
                    f"{self.path}: anchor set '{anchor.name}' is frozen already (a frozen set is "
                    "never changed): choose another name"
                )
            self._conn.execute(ANCHOR_SETS.insert_sql(), ANCHOR_SETS.values(anchor))
            self._conn.executemany(
                ANCHOR_CASES.insert_sql(), [ANCHOR_CASES.values(c) for c in cases]
            )
            self._conn.executemany(
                ANCHOR_LABELS.insert_sql(), [ANCHOR_LABELS.values(lab) for lab in labels]
            )

    def anchor_sets(self) -> list[AnchorSet]:
        """Every frozen anchor set, oldest first."""
        if not self._has_table("anchor_sets"):
            return []
        rows = self._all(f"SELECT {ANCHOR_SETS.select()} FROM anchor_sets ORDER BY rowid")
        return ANCHOR_SETS.load_all(rows)

    def anchor_set(self, name: str) -> AnchorSet:
        """A frozen anchor set by name; an unknown name is an error naming the known."""
        row = None
        if self._has_table("anchor_sets"):
            row = self._one(
                f"SELECT {ANCHOR_SETS.select()} FROM anchor_sets WHERE name = ?", (name,)
            )
        if row is None:
            known = ", ".join(a.name for a in self.anchor_sets()) or "none"
            raise TiapError(
                f"{self.path}: no anchor set named '{name}' (known: {known}; 'tiap judge "
                "anchor freeze NAME' freezes one)"
            )
        return ANCHOR_SETS.load(row)

    def anchor_cases(self, name: str) -> list[AnchorCase]:
        """An anchor set's cases, in their order."""
        rows = self._all(
            f"SELECT {ANCHOR_CASES.select()} FROM anchor_cases WHERE anchor = ? ORDER BY position",
            (name,),
        )
        return ANCHOR_CASES.load_all(rows)

    def anchor_labels(self, name: str) -> list[AnchorLabel]:
        """An anchor set's frozen labels, by case and rater."""
        rows = self._all(
            f"SELECT {ANCHOR_LABELS.select()} FROM anchor_labels WHERE anchor = ? "
            "ORDER BY case_id, rater",
            (name,),
        )
        return ANCHOR_LABELS.load_all(rows)

    def live_case_ids(self, case_ids: Iterable[str]) -> set[str]:
        """Which of ``case_ids`` are live cases of the workspace (present, not retired)."""
        found: set[str] = set()
        for chunk in chunks(sorted(set(case_ids))):
            rows = self._all(
                f"SELECT case_id FROM cases WHERE case_id IN ({marks(len(chunk))}){self._live()}",
                chunk,
            )
            found.update(str(r[0]) for r in rows)
        return found
