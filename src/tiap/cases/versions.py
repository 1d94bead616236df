"""Bundle versions in the workspace: which version each case is of, stale cases,
retirement, and stale subsets.

- A **version** (``bundle_versions``) is one state of the input a *scope* of cases
  comes from, known by its fingerprint (:mod:`tiap.cases.fingerprint`). Scope
  ``contested``: the workspace's contested credits, one bundle's; scope
  ``qrels:NAME``: the qrels pairs drawn as subset NAME; scope ``answers:RUN``: the
  answer cases of one run (its generated answers). A scope has at most one
  current version (``retired_at`` NULL).
- A case records the version that last stored it or found it unchanged
  (``cases.bundle_fingerprint``; NULL: stored by an earlier tiap, before
  versions were recorded). Every live contested credit is of the current
  contested version.
- A stored case is **stale** when the new version does not give it, or gives it
  with other content (its content key differs). Storing a version that makes
  cases stale is an error naming both versions unless ``replace_stale``; then each
  stale case version is **retired**: copied to ``case_versions`` with the version
  it was of, and every label made on it marked with that row
  (``labels.retired_with``). The case row then holds the new version's content
  when the new version gives the case (and it is to be stored), else it is marked
  ``retired_at``. Retired cases and labels stay in the file and enter no figure:
  every read of :class:`~tiap.cases.workspace.Workspace` that feeds one leaves
  them out.
- A **subset goes stale** (``subsets.stale_since``) when a case version it holds
  is retired, or, for contested credits, when their version moves on: a subset is
  a draw from one version's pool. Reading a stale subset's cases is an error
  naming the way out (draw it again, which makes it current); it stays listed
  (``tiap cases subsets``).
- The first version recorded for contested credits **adopts** the cases (and the
  subsets) an earlier tiap stored when they are the ones the bundle gives; the
  others are stale like any.

Stale cases being judged (a live lease) or waiting in an open provider batch are
not retired: the runs holding them must finish first.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.fingerprint import content_key, short
from tiap.cases.models import BundleVersion, Case, CaseVersion
from tiap.cases.rows import BUNDLE_VERSIONS, CASE_VERSIONS, CASES, SUBSETS
from tiap.cases.store import Store, chunks, marks, now_iso
from tiap.cases.vocab import ANSWER, CONTESTED, QRELS, SUBSET_QRELS_SAMPLE
from tiap.errors import TiapError

#: The scope of the workspace's contested credits.
CONTESTED_SCOPE = "contested"

VersionStatus = Literal["new", "same", "adopted", "moved"]


def qrels_scope(subset: str) -> str:
    """The scope of the qrels pairs drawn as ``subset``."""
    return f"qrels:{subset}"


def answers_scope(run: str) -> str:
    """The scope of the answer cases of ``run`` (its generated answers)."""
    return f"answers:{run}"


#: how messages name the cases of each kind
_KIND_CASES = {QRELS: "qrels pairs", ANSWER: "answer cases"}


class StaleCasesError(TiapError):
    """Storing a version would leave stale cases, and ``replace_stale`` was not given."""


class VersionChange(BaseModel):
    """What storing a version did.

    ``status``: ``new`` (the scope had no version and no cases), ``same`` (the
    scope's current version), ``adopted`` (cases of an earlier tiap, unchanged, now
    of this version), ``moved`` (the scope's version changed)."""

    model_config = ConfigDict(extra="forbid")

    fingerprint: str
    previous: str | None = None
    status: VersionStatus = "new"
    added: int = 0
    already_present: int = 0
    #: stored cases of an earlier version that this one gives unchanged
    carried: int = 0
    #: stale case versions retired (kept, out of every figure), with their labels
    retired: int = 0
    retired_labels: int = 0
    #: of the retired, those whose new content was stored in their place
    replaced: int = 0
    #: subsets that hold retired or earlier-version cases (draw them again)
    stale_subsets: list[str] = Field(default_factory=list)


class VersionStore(Store):
    """Versions, retirement and staleness (a base of :class:`~tiap.cases.workspace.Workspace`)."""

    # ------------------------------------------------------------------ schema

    @cached_property
    def _case_table_columns(self) -> frozenset[str]:
        return frozenset(str(r[1]) for r in self._all("PRAGMA table_info(cases)"))

    @cached_property
    def _subset_table_columns(self) -> frozenset[str]:
        return frozenset(str(r[1]) for r in self._all("PRAGMA table_info(subsets)"))

    @cached_property
    def _versioned(self) -> bool:
        """Whether the schema records versions (8 on; an earlier workspace opened
        read-only has none, and no retired case or label)."""
        return "retired_at" in self._case_table_columns

    def _live(self, alias: str = "") -> str:
        """`` AND c.retired_at IS NULL`` (nothing on an earlier schema)."""
        prefix = f"{alias}." if alias else ""
        return f" AND {prefix}retired_at IS NULL" if self._versioned else ""

    def _live_labels(self, alias: str = "") -> str:
        prefix = f"{alias}." if alias else ""
        return f"{prefix}retired_with IS NULL" if self._versioned else "1"

    # ------------------------------------------------------------------- reads

    def current_version(self, scope: str) -> BundleVersion | None:
        """The scope's current version, if one is recorded."""
        if not self._versioned:
            return None
        row = self._one(
            f"SELECT {BUNDLE_VERSIONS.select()} FROM bundle_versions "
            "WHERE scope = ? AND retired_at IS NULL",
            (scope,),
        )
        return None if row is None else BUNDLE_VERSIONS.load(row)

    def bundle_versions(self) -> list[BundleVersion]:
        """Every recorded version, by scope then time."""
        if not self._versioned:
            return []
        return BUNDLE_VERSIONS.load_all(
            self._all(
                f"SELECT {BUNDLE_VERSIONS.select()} FROM bundle_versions "
                "ORDER BY scope, created_at, fingerprint"
            )
        )

    def retired_case_versions(self, case_id: str | None = None) -> list[CaseVersion]:
        """The retired case versions kept in the workspace (of one case), oldest first."""
        if not self._versioned:
            return []
        sql, args = f"SELECT {CASE_VERSIONS.select()} FROM case_versions", []
        if case_id is not None:
            sql += " WHERE case_id = ?"
            args.append(case_id)
        return CASE_VERSIONS.load_all(self._all(sql + " ORDER BY id", args))

    def case_fingerprints(self, case_ids: Sequence[str]) -> dict[str | None, int]:
        """How many of the given live cases are of each version (``None``: not recorded)."""
        counts: dict[str | None, int] = {}
        if not self._versioned:
            return {None: len(set(case_ids))} if case_ids else {}
        for chunk in chunks(sorted(set(case_ids))):
            for fp, n in self._all(
                "SELECT bundle_fingerprint, COUNT(*) FROM cases "
                f"WHERE case_id IN ({marks(len(chunk))}){self._live()} GROUP BY bundle_fingerprint",
                chunk,
            ):
                counts[fp] = counts.get(fp, 0) + int(n)
        return counts

    def case_versions_of(self, case_ids: Sequence[str]) -> dict[str, str | None]:
        """``case_id -> bundle version`` of the given live cases (``None``: not recorded)."""
        out: dict[str, str | None] = {}
        if not self._versioned:
            return dict.fromkeys(case_ids)
        for chunk in chunks(sorted(set(case_ids))):
            for cid, fp in self._all(
                "SELECT case_id, bundle_fingerprint FROM cases "
                f"WHERE case_id IN ({marks(len(chunk))}){self._live()}",
                chunk,
            ):
                out[str(cid)] = fp
        return out

    def stale_subsets(self) -> list[str]:
        """Subsets that hold a retired case version or cases of an earlier bundle
        version (see the module doc), by name."""
        if not self._versioned:
            return []
        sql = "SELECT name FROM subsets WHERE stale_since IS NOT NULL ORDER BY name"
        return [r[0] for r in self._all(sql)]

    def subset_is_stale(self, name: str) -> bool:
        if not self._versioned:
            return False
        row = self._one("SELECT stale_since FROM subsets WHERE name = ?", [name])
        return row is not None and row[0] is not None

    def _require_fresh_subset(self, name: str) -> None:
        """Refuse to read the cases of a stale subset (TiapError naming the way out)."""
        if not self.subset_is_stale(name):
            return
        row = self._one(f"SELECT {SUBSETS.select()} FROM subsets WHERE name = ?", [name])
        record = SUBSETS.load(row) if row is not None else None
        params = record.params if record is not None else {}
        drawn = f"bundle version {short(record.bundle_fingerprint if record else None)}"
        if params.get("kind") == SUBSET_QRELS_SAMPLE:
            again = f"tiap cases from-qrels SOURCE --db {self.path} --name {name} --replace-stale"
        elif params.get("case_kind") == ANSWER:
            again = f"tiap cases sample --db {self.path} --name {name} --kind answer --replace"
        else:
            again = f"tiap cases sample --db {self.path} --name {name} --replace"
        now = ""
        current = self.current_version(CONTESTED_SCOPE)
        if params.get("case_kind", CONTESTED) == CONTESTED and current is not None:
            now = f" (the contested credits are of version {short(current.fingerprint)} now)"
        raise TiapError(
            f"{self.path}: subset '{name}' is stale: it was drawn from {drawn}, and cases "
            f"it holds have been retired or changed since{now}; draw it again ({again})"
        )

    # ------------------------------------------------------------------ writes

    def store_version(
        self,
        version: BundleVersion,
        fresh: Sequence[Case],
        *,
        store: Collection[str] | None = None,
        exclusive: bool,
        replace_stale: bool = False,
        what: str = "the input",
    ) -> VersionChange:
        """Store the cases of a version (see the module doc).

        ``fresh``: every case the version gives; ``store``: the ids of those to store
        (default: all). ``exclusive``: the version is the only one of its kind in the
        workspace (contested credits): every live case of the kind is compared with
        it, and one it does not give is stale; otherwise only stored cases with the
        ids of ``fresh`` are (qrels pairs). ``what`` names the input in messages.
        """
        fp = version.fingerprint
        by_id = {c.case_id: c for c in fresh}
        wanted = [cid for cid in by_id if store is None or cid in store]
        with self.transaction():
            current = self.current_version(version.scope)
            compared = self._compare_with(version.kind, fp, by_id, exclusive=exclusive)
            stale = [c for c, _, same in compared if not same]
            carried = [c for c, _, same in compared if same]
            moved = current is not None and current.fingerprint != fp
            if stale or (exclusive and moved):
                if not replace_stale:
                    raise self._stale_error(version, current, compared, by_id, what, exclusive)
                self._check_not_in_flight([c.case_id for c in stale])
            change = self._apply(version, by_id, wanted, stale, carried, compared)
            self._record(version, current)
            now = now_iso()
            self._mark_stale(now, [c.case_id for c in stale])
            if exclusive and current is None and compared:
                self._adopt_legacy_subsets(version.kind, fp)
            if exclusive and moved:
                self._conn.execute(
                    "UPDATE subsets SET stale_since = ? WHERE stale_since IS NULL "
                    "AND bundle_fingerprint IS NOT ? AND name IN (SELECT m.subset FROM "
                    "subset_cases m JOIN cases c USING (case_id) WHERE c.kind = ?)",
                    (now, fp, version.kind),
                )
            status: VersionStatus = "same"
            if moved or (current is None and stale):
                status = "moved"
            elif current is None:
                status = "adopted" if exclusive and compared else "new"
            return change.model_copy(
                update={
                    "previous": current.fingerprint if current is not None else None,
                    "status": status,
                    "stale_subsets": self.stale_subsets(),
                }
            )

    def _compare_with(
        self, kind: str, fp: str, by_id: dict[str, Case], *, exclusive: bool
    ) -> list[tuple[Case, str | None, bool]]:
        """(stored live case, its version, whether the new version gives it unchanged)
        for the stored cases to compare: not already of version ``fp``."""
        select = f"SELECT {CASES.select(present=self._case_table_columns)}, bundle_fingerprint"
        rows = []
        if exclusive:
            rows = self._all(
                f"{select} FROM cases WHERE kind = ? AND retired_at IS NULL "
                "AND bundle_fingerprint IS NOT ? ORDER BY case_id",
                [kind, fp],
            )
        else:
            for chunk in chunks(sorted(by_id)):
                rows += self._all(
                    f"{select} FROM cases WHERE case_id IN ({marks(len(chunk))}) "
                    "AND retired_at IS NULL AND bundle_fingerprint IS NOT ?",
                    [*chunk, fp],
                )
        out = []
        for row in rows:
            stored = CASES.load(row)
            new = by_id.get(stored.case_id)
            same = new is not None and content_key(new) == content_key(stored)
            out.append((stored, row["bundle_fingerprint"], same))
        return out

    def _stale_error(
        self,
        version: BundleVersion,
        current: BundleVersion | None,
        compared: list[tuple[Case, str | None, bool]],
        by_id: dict[str, Case],
        what: str,
        exclusive: bool,
    ) -> StaleCasesError:
        noun = _KIND_CASES.get(version.kind, "contested credits")
        stale = [c for c, _, same in compared if not same]
        olds = sorted({fp for _, fp, same in compared if not same and fp is not None})
        if exclusive and current is not None:
            held = f"holds {noun} of bundle version {short(current.fingerprint)}"
        elif olds:
            held = f"holds {noun} of bundle version {', '.join(short(o) for o in olds)}"
        else:
            held = f"holds {noun} stored before tiap recorded bundle versions"
        gone = sum(1 for c in stale if c.case_id not in by_id)
        detail = f"{len(stale) - gone} of them differ"
        if exclusive:
            detail += f", {gone} are gone"
        if current is not None:
            detail += "".join(
                f"; {key} {current.definition.get(key)} -> {value}"
                for key, value in version.definition.items()
                if current.definition.get(key) != value
            )
        return StaleCasesError(
            f"{self.path}: {held}, and {what} now gives version {short(version.fingerprint)} "
            f"({detail}): use another workspace, or add --replace-stale to retire the stale "
            "cases and their labels (kept in the workspace, left out of every figure) and go "
            f"on with version {short(version.fingerprint)}"
        )

    def _check_not_in_flight(self, case_ids: Sequence[str]) -> None:
        busy: set[str] = set()
        now = time.time()
        for chunk in chunks(sorted(set(case_ids))):
            args = list(chunk)
            busy.update(
                r[0]
                for r in self._all(
                    f"SELECT case_id FROM judge_leases WHERE expires_at > ? "
                    f"AND case_id IN ({marks(len(chunk))})",
                    [now, *args],
                )
            )
            busy.update(
                r[0]
                for r in self._all(
                    "SELECT p.case_id FROM provider_batch_pairs p JOIN provider_batches b "
                    "ON b.id = p.submission WHERE b.state NOT IN ('closed', 'abandoned') "
                    f"AND p.case_id IN ({marks(len(chunk))})",
                    args,
                )
            )
        if busy:
            raise TiapError(
                f"{self.path}: {len(busy)} of the stale cases are being judged or wait in an "
                "open provider batch (tiap judge batches): let those runs finish before "
                "replacing them"
            )

    def _apply(
        self,
        version: BundleVersion,
        by_id: dict[str, Case],
        wanted: list[str],
        stale: list[Case],
        carried: list[Case],
        compared: list[tuple[Case, str | None, bool]],
    ) -> VersionChange:
        fp, now = version.fingerprint, now_iso()
        was = {c.case_id: old for c, old, _ in compared}
        wanted_set = set(wanted)
        retired_labels = replaced = 0
        for case in stale:
            created = self._one("SELECT created_at FROM cases WHERE case_id = ?", [case.case_id])
            record = CaseVersion(
                case_id=case.case_id,
                bundle_fingerprint=was[case.case_id],
                case=case,
                created_at=str(created[0]) if created is not None else now,
                retired_at=now,
                retired_by=fp,
            )
            cur = self._conn.execute(CASE_VERSIONS.insert_sql(), CASE_VERSIONS.values(record))
            marked = self._conn.execute(
                "UPDATE labels SET retired_with = ? WHERE case_id = ? AND retired_with IS NULL",
                (int(cur.lastrowid or 0), case.case_id),
            )
            retired_labels += int(marked.rowcount)
            if case.case_id in wanted_set:
                self._overwrite(by_id[case.case_id], fp, now)
                replaced += 1
            else:
                self._conn.execute(
                    "UPDATE cases SET retired_at = ? WHERE case_id = ?", (now, case.case_id)
                )
        for chunk in chunks([c.case_id for c in carried]):
            self._conn.execute(
                f"UPDATE cases SET bundle_fingerprint = ? WHERE case_id IN ({marks(len(chunk))})",
                [fp, *chunk],
            )
        added = present = 0
        handled = {c.case_id for c in stale}
        sql = CASES.insert_sql("INSERT OR IGNORE")
        for cid in wanted:
            if cid in handled:
                continue
            case = by_id[cid]
            inserted = self._conn.execute(
                sql, CASES.values(case, created_at=now, bundle_fingerprint=fp, retired_at=None)
            )
            if inserted.rowcount:
                added += 1
                continue
            revived = self._conn.execute(
                "SELECT 1 FROM cases WHERE case_id = ? AND retired_at IS NOT NULL", [cid]
            ).fetchone()
            if revived is not None:  # retired with an earlier version, given again
                self._overwrite(case, fp, now)
                added += 1
            else:
                present += 1
        return VersionChange(
            fingerprint=fp,
            added=added,
            already_present=present,
            carried=len(carried),
            retired=len(stale),
            retired_labels=retired_labels,
            replaced=replaced,
        )

    def _overwrite(self, case: Case, fp: str, now: str) -> None:
        """The row of ``case`` with its new content, of version ``fp``, live."""
        names = [n for n in CASES.insert_names if n != "case_id"]
        values = dict(
            zip(
                CASES.insert_names,
                CASES.values(case, created_at=now, bundle_fingerprint=fp, retired_at=None),
                strict=True,
            )
        )
        sets = ", ".join(f"{n} = ?" for n in names)
        self._conn.execute(
            f"UPDATE cases SET {sets} WHERE case_id = ?",
            [*(values[n] for n in names), case.case_id],
        )

    def _record(self, version: BundleVersion, current: BundleVersion | None) -> None:
        now = now_iso()
        if current is not None and current.fingerprint != version.fingerprint:
            self._conn.execute(
                "UPDATE bundle_versions SET retired_at = ? WHERE scope = ? AND fingerprint = ?",
                (now, current.scope, current.fingerprint),
            )
        record = version.model_copy(update={"created_at": now, "retired_at": None})
        updates = "source = excluded.source, cases = excluded.cases, retired_at = NULL"
        if current is not None and current.fingerprint == version.fingerprint:
            updates = "source = excluded.source, cases = excluded.cases"
        self._conn.execute(
            BUNDLE_VERSIONS.insert_sql()
            + f" ON CONFLICT(scope, fingerprint) DO UPDATE SET {updates}",
            BUNDLE_VERSIONS.values(record),
        )

    def _mark_stale(self, now: str, retired: Sequence[str]) -> None:
        """Subsets holding any of the ``retired`` case ids go stale."""
        for chunk in chunks(sorted(set(retired))):
            self._conn.execute(
                "UPDATE subsets SET stale_since = ? WHERE stale_since IS NULL AND name IN "
                f"(SELECT subset FROM subset_cases WHERE case_id IN ({marks(len(chunk))}))",
                [now, *chunk],
            )

    def _adopt_legacy_subsets(self, kind: str, fp: str) -> None:
        """Subsets an earlier tiap drew from these cases are of the adopted version
        (one holding a case found stale is stale already)."""
        self._conn.execute(
            "UPDATE subsets SET bundle_fingerprint = ? WHERE bundle_fingerprint IS NULL AND "
            "stale_since IS NULL AND name IN (SELECT m.subset FROM subset_cases m "
            "JOIN cases c USING (case_id) WHERE c.kind = ?)",
            (fp, kind),
        )
