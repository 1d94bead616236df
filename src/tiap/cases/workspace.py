"""The workspace: one SQLite file holding cases, subsets, every label and every
model call (DESIGN.md, "Case store").

- The file is marked as tiap's (``PRAGMA application_id``, ``user_version``); any
  other file is refused untouched (:mod:`tiap.cases.opening`). Only commands that
  create a workspace create one (``create=True``, the default of the class).
- Commands that only read open it with :meth:`Workspace.open_readonly`: no
  migration, no WAL switch, no write; a read-only file or directory is fine.
- WAL mode, foreign keys on, schema changes only through recorded migrations
  (:mod:`tiap.cases.migrations`). A workspace from a newer tiap is refused.
- A label is never overwritten: a changed label is a new row and the latest
  row per (case, rater) wins; a human label is withdrawn by a ``retracted`` row.
  Rater names are one namespace (:mod:`tiap.cases.label_rows`).
- Every write commits before the call returns, unless it runs inside
  :meth:`Workspace.transaction`, which commits once at the end.
- Cases record the bundle version they are of; a case or label of a retired
  version is kept and left out of every read below, and a stale subset's cases
  are not read (:mod:`tiap.cases.versions`).
- Concurrent runs coordinate through it: judge pairs are leased before they
  are called, spending is one ledger (:mod:`tiap.cases.leases`), and provider
  batches are recorded before they are sent (:mod:`tiap.cases.batches`).
- Probe judgments and frozen anchor sets are kept apart from the labels, and
  never enter their reads (:mod:`tiap.cases.probe_store`).
- Only this package issues SQL: every query is a method here, and rows map to
  the pydantic models of :mod:`tiap.cases.models` (:mod:`tiap.cases.rows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from tiap.cases import opening
from tiap.cases.batches import BatchStore
from tiap.cases.label_rows import LabelStore
from tiap.cases.leases import LeaseStore
from tiap.cases.models import Case, ModelCall, SubsetMember, SubsetRecord
from tiap.cases.probe_store import ProbeStore
from tiap.cases.rows import CASES, MODEL_CALLS, SUBSET_CASES, SUBSETS
from tiap.cases.store import chunks, marks, now_iso
from tiap.cases.vocab import CONTESTED, CaseKind
from tiap.errors import TiapError

__all__ = ["Workspace", "now_iso"]

_CASE_ORDER = " ORDER BY run, query_index, case_id"
_KIND_ORDER = " ORDER BY kind, run, query_index, case_id"


@lru_cache(maxsize=16)
def _upsert_calls(rows: int) -> str:
    """The ``model_calls`` insert of ``rows`` rows: a success stored is kept."""
    kept = ("request_hash", "model", "api_base", "request_json")
    updates = ", ".join(f"{c}=excluded.{c}" for c in MODEL_CALLS.names if c not in kept)
    return (
        MODEL_CALLS.insert_sql(rows=rows)
        + f" ON CONFLICT(request_hash) DO UPDATE SET {updates} WHERE model_calls.status != 'ok'"
    )


class Workspace(BatchStore, LeaseStore, ProbeStore, LabelStore):
    """A handle on a workspace file. Use as a context manager, or call :meth:`close`.

    ``Workspace(path)`` opens for writing and creates the file when it does not
    exist; ``create=False`` requires it to exist; :meth:`open_readonly` reads only.
    """

    @classmethod
    def open_readonly(cls, path: str | Path) -> Workspace:
        """Open an existing workspace read-only (``mode=ro``): nothing is migrated,
        marked or written, and the file and its directory may be read-only."""
        return cls(path, create=False, readonly=True)

    @staticmethod
    def writable(path: str | Path) -> bool:
        """Whether an existing workspace file (and its directory) can be written."""
        return opening.writable(Path(path))

    # ---------------------------------------------------------------------- cases

    def add_cases(
        self, cases: Iterable[Case], *, bundle_fingerprint: str | None = None
    ) -> tuple[int, int]:
        """Insert cases not yet present (of version ``bundle_fingerprint``, if given);
        returns (added, already present). Storing a bundle's cases goes through
        :meth:`store_version`, which also finds stale ones."""
        added = existing = 0
        created = now_iso()
        sql = CASES.insert_sql("INSERT OR IGNORE")
        with self.transaction():
            for c in cases:
                values = CASES.values(
                    c, created_at=created, bundle_fingerprint=bundle_fingerprint, retired_at=None
                )
                cur = self._conn.execute(sql, values)
                if cur.rowcount:
                    added += 1
                else:
                    existing += 1
        return added, existing

    def case(self, case_id: str) -> Case:
        """A live case by id (a retired one is an error saying so)."""
        marked = ", retired_at" if self._versioned else ""
        row = self._one(
            f"SELECT {self._case_select()}{marked} FROM cases WHERE case_id = ?", (case_id,)
        )
        if row is None:
            raise TiapError(f"{self.path}: no case '{case_id}'")
        if marked and row["retired_at"] is not None:
            raise TiapError(
                f"{self.path}: case '{case_id}' was retired on {row['retired_at']} (its bundle "
                "version was replaced; it is kept, out of every figure)"
            )
        return CASES.load(row)

    def cases(
        self,
        *,
        subset: str | None = None,
        runs: Sequence[str] | None = None,
        kind: CaseKind | None = None,
    ) -> list[Case]:
        """Live cases in a stable order: a subset's own order, else by kind, run and
        query index; ``runs`` and ``kind`` filter. A stale subset is an error."""
        where, args = self._live("c"), list(runs or [])
        if runs is not None:
            if not args:
                return []
            where += f" AND c.run IN ({marks(len(args))})"
        if kind is not None:
            if not self._has_kinds:
                return [] if kind != CONTESTED else self.cases(subset=subset, runs=runs)
            where += " AND c.kind = ?"
            args.append(kind)
        if subset is not None:
            self._require_subset(subset)
            self._require_fresh_subset(subset)
            rows = self._all(
                f"SELECT {self._case_select('c')} FROM subset_cases s JOIN cases c USING (case_id) "
                f"WHERE s.subset = ?{where} ORDER BY s.position",
                [subset, *args],
            )
        else:
            select = f"SELECT {self._case_select('c')} FROM cases c"
            rows = self._all(f"{select} WHERE 1{where}{self._case_order}", args)
        return CASES.load_all(rows)

    def case_ids(self, *, subset: str | None = None, include_stale: bool = False) -> list[str]:
        """Live case ids (a subset's, in its order; a stale subset is an error unless
        ``include_stale``, which lists what it holds)."""
        if subset is not None:
            self._require_subset(subset)
            if not include_stale:
                self._require_fresh_subset(subset)
            return [
                r[0]
                for r in self._all(
                    "SELECT case_id FROM subset_cases WHERE subset = ? ORDER BY position",
                    (subset,),
                )
            ]
        return [
            r[0]
            for r in self._all(f"SELECT case_id FROM cases WHERE 1{self._live()}{self._case_order}")
        ]

    def count_cases(self, kind: CaseKind | None = None) -> int:
        """Every live case, or the live cases of one kind."""
        if kind is None or not self._has_kinds:
            if kind not in (None, CONTESTED):
                return 0
            row = self._one(f"SELECT COUNT(*) FROM cases WHERE 1{self._live()}")
        else:
            row = self._one(f"SELECT COUNT(*) FROM cases WHERE kind = ?{self._live()}", (kind,))
        return int(row[0]) if row is not None else 0

    def case_kinds(
        self, *, subset: str | None = None, case_ids: Iterable[str] | None = None
    ) -> dict[str, int]:
        """How many live cases of each kind (kind -> count, sorted by kind): in a
        subset, among some case ids, or in the whole workspace. A workspace read before
        its cases had kinds (read-only, not migrated) holds contested credits only."""
        if not self._has_kinds:
            n = (
                len(self.case_ids(subset=subset))
                if case_ids is None
                else len(set(case_ids) & set(self.case_ids(subset=subset)))
            )
            return {CONTESTED: n} if n else {}
        counts: dict[str, int] = {}
        live = self._live()
        if case_ids is not None:
            wanted = sorted(set(case_ids))
            for chunk in chunks(wanted):
                for kind, n in self._all(
                    f"SELECT kind, COUNT(*) FROM cases WHERE case_id IN ({marks(len(chunk))})"
                    f"{live} GROUP BY kind",
                    chunk,
                ):
                    counts[kind] = counts.get(kind, 0) + int(n)
        elif subset is not None:
            self._require_subset(subset)
            self._require_fresh_subset(subset)
            rows = self._all(
                "SELECT c.kind, COUNT(*) FROM subset_cases s JOIN cases c USING (case_id) "
                f"WHERE s.subset = ?{self._live('c')} GROUP BY c.kind",
                (subset,),
            )
            counts = {str(k): int(n) for k, n in rows}
        else:
            rows = self._all(f"SELECT kind, COUNT(*) FROM cases WHERE 1{live} GROUP BY kind")
            counts = {str(k): int(n) for k, n in rows}
        return dict(sorted(counts.items()))

    @cached_property
    def _has_kinds(self) -> bool:
        """Whether ``cases`` has its ``kind`` column (schema 5 on; an earlier workspace
        opened read-only has contested credits only)."""
        return "kind" in self._case_table_columns

    def _case_select(self, alias: str = "") -> str:
        """The case columns this workspace's schema has (all, once migrated)."""
        return CASES.select(alias, present=self._case_table_columns)

    @property
    def _case_order(self) -> str:
        return _KIND_ORDER if self._has_kinds else _CASE_ORDER

    # -------------------------------------------------------------------- subsets

    def _require_subset(self, name: str) -> None:
        if self._one("SELECT 1 FROM subsets WHERE name = ?", (name,)) is None:
            known = ", ".join(self.subsets()) or "none"
            raise TiapError(f"{self.path}: no subset named '{name}' (known: {known})")

    def save_subset(
        self,
        name: str,
        case_ids: Sequence[str],
        *,
        overlap: Iterable[str] = (),
        params: dict[str, Any] | None = None,
        replace: bool = False,
    ) -> None:
        """Store a named subset (ordered) with its overlap members, recording the
        bundle version its cases are of (a stale subset drawn again is current)."""
        overlap_set = set(overlap)
        unknown = overlap_set - set(case_ids)
        if unknown:
            raise TiapError(f"overlap cases not in subset '{name}': {sorted(unknown)[:3]}")
        members = [
            SubsetMember(subset=name, case_id=cid, position=i, overlap=cid in overlap_set)
            for i, cid in enumerate(case_ids)
        ]
        with self.transaction():
            versions = self.case_fingerprints(case_ids)
            record = SubsetRecord(
                name=name,
                params=params or {},
                created_at=now_iso(),
                bundle_fingerprint=next(iter(versions)) if len(versions) == 1 else None,
            )
            if self._one("SELECT 1 FROM subsets WHERE name = ?", (name,)) is not None:
                if not replace:
                    raise TiapError(
                        f"{self.path}: subset '{name}' exists already (choose another name)"
                    )
                self._conn.execute("DELETE FROM subset_cases WHERE subset = ?", (name,))
                self._conn.execute("DELETE FROM subsets WHERE name = ?", (name,))
            self._conn.execute(SUBSETS.insert_sql(), SUBSETS.values(record))
            self._conn.executemany(
                SUBSET_CASES.insert_sql(), [SUBSET_CASES.values(m) for m in members]
            )

    def subsets(self) -> list[str]:
        return [r[0] for r in self._all("SELECT name FROM subsets ORDER BY name")]

    def subset(self, name: str) -> SubsetRecord:
        """A subset's row: name, parameters (``kind``, n, seed, ...), time."""
        columns = SUBSETS.select(present=self._subset_table_columns)
        row = self._one(f"SELECT {columns} FROM subsets WHERE name = ?", (name,))
        if row is None:
            self._require_subset(name)
        return SUBSETS.load(row)  # type: ignore[arg-type]

    def subset_params(self, name: str) -> dict[str, Any]:
        return self.subset(name).params

    def overlap_ids(self, name: str, *, include_stale: bool = False) -> list[str]:
        self._require_subset(name)
        if not include_stale:
            self._require_fresh_subset(name)
        return [
            r[0]
            for r in self._all(
                "SELECT case_id FROM subset_cases WHERE subset = ? AND overlap = 1 "
                "ORDER BY position",
                (name,),
            )
        ]

    # ---------------------------------------------------------------- model calls

    def model_call(self, request_hash: str) -> ModelCall | None:
        """The stored ``model_calls`` row for a request hash, if any."""
        row = self._one(
            f"SELECT {MODEL_CALLS.select()} FROM model_calls WHERE request_hash = ?",
            (request_hash,),
        )
        return None if row is None else MODEL_CALLS.load(row)

    def cached_call(self, request_hash: str) -> dict[str, Any] | None:
        """The stored ``model_calls`` row for a request hash as its raw columns
        (``response_json`` is the JSON text); :meth:`model_call` gives the model."""
        row = self._one(
            f"SELECT {MODEL_CALLS.select()} FROM model_calls WHERE request_hash = ?",
            (request_hash,),
        )
        return None if row is None else dict(zip(row.keys(), tuple(row), strict=True))

    def cached_responses(self, request_hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Successful stored responses by request hash (the hashes without one are
        absent); long lists are queried in chunks."""
        out: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(request_hashes))
        for chunk in chunks(unique):
            rows = self._all(
                f"SELECT {MODEL_CALLS.select()} FROM model_calls "
                f"WHERE status = 'ok' AND request_hash IN ({marks(len(chunk))})",
                chunk,
            )
            for row in rows:
                call = MODEL_CALLS.load(row)
                if call.response:
                    out[call.request_hash] = call.response
        return out

    def store_call(
        self,
        *,
        request_hash: str,
        model: str,
        api_base: str | None,
        request: dict[str, Any],
        response: dict[str, Any] | None,
        status: str,
        error: str | None = None,
        latency_ms: float | None = None,
        cost_usd: float | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """Record a model call (request without secrets). A later call with the same
        hash replaces an earlier *failed* one; a stored success is kept."""
        call = ModelCall(
            request_hash=request_hash,
            model=model,
            api_base=api_base,
            request=request,
            response=response,
            status=status,
            error=error,
            created_at=now_iso(),
            latency_ms=latency_ms,
            cost_usd=cost_usd,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        self.store_calls([call])

    def store_calls(
        self, calls: Sequence[ModelCall], request_json: Sequence[str | None] = ()
    ) -> None:
        """Record model calls, in order, in one transaction (multi-row statements): a
        call replaces a stored *failed* one with its hash (an earlier one of the
        same list too); a stored success is kept. ``request_json``: the calls'
        requests as stored (:class:`~tiap.cases.rows.JsonTemplate`), where known."""
        texts = list(request_json)[: len(calls)]
        texts += [None] * (len(calls) - len(texts))
        rows = [
            MODEL_CALLS.values(c, json_text=None if t is None else {"request": t})
            for c, t in zip(calls, texts, strict=True)
        ]
        self._insert_rows(_upsert_calls, rows)
