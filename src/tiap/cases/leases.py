"""Claims on judge pairs (leases) and the budget ledger: what lets several
processes judge one workspace at once without paying or storing anything twice.

- A **lease** (``judge_leases``) says that a run (its ``owner``) calls one
  (case, judge, rubric) pair, for one request hash, until ``expires_at`` (Unix
  seconds). A run takes leases in batches, in one transaction, renews them while
  it works and deletes them when it is done; a crashed run's leases expire and
  any run may then take the pair over.
- **Done since**: a label row stored after a run planned (its id is above the
  run's *label epoch*) that carries the pair's request hash means another run
  judged the pair meanwhile; :meth:`LeaseStore.labels_since` finds them.
- The **ledger** (``budget_ledger``) holds one row per run: what it has reserved
  (the worst cases of calls it is making and has not settled) and what it spent,
  and until when it is known to run (``expires_at``: renewed while it works, its
  end once it has finished). Runs of one scope whose times overlap share a
  budget (:meth:`LeaseStore.sharing_ledger`); whose reservations still count is
  decided in :mod:`tiap.judge.claims`.

The judge package composes these calls inside :meth:`Store.transaction`; the
rules (what is claimable, what fits the budget) are in :mod:`tiap.judge.claims`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tiap.cases.rows import LEASES, LEDGER
from tiap.cases.run_models import LedgerEntry, PairLease
from tiap.cases.store import Store, chunks, marks, now_iso


class LeaseStore(Store):
    """Leases and the budget ledger (a base of :class:`~tiap.cases.workspace.Workspace`)."""

    # ------------------------------------------------------------------ labels

    def max_label_id(self) -> int:
        """The newest label row's id (0 for none): a run's label epoch."""
        row = self._one("SELECT COALESCE(MAX(id), 0) FROM labels")
        return int(row[0]) if row is not None else 0

    def labels_since(
        self, rater: str, rubric_hash: str, case_ids: Iterable[str], since_id: int
    ) -> set[tuple[str, str]]:
        """(case_id, request_hash) of the rater's labels under the rubric with an id
        above ``since_id``, for the given cases (indexed by case and rater)."""
        out: set[tuple[str, str]] = set()
        for chunk in chunks(sorted(set(case_ids))):
            rows = self._all(
                "SELECT case_id, request_hash FROM labels WHERE rater = ? AND id > ? "
                f"AND rubric_hash = ? AND case_id IN ({marks(len(chunk))})",
                [rater, since_id, rubric_hash, *chunk],
            )
            out.update((r[0], r[1]) for r in rows if r[1] is not None)
        return out

    # ------------------------------------------------------------------ leases

    def live_leases(
        self,
        rater: str,
        rubric_hash: str,
        *,
        case_ids: Sequence[str] = (),
        request_hashes: Sequence[str] = (),
        now: float,
    ) -> list[PairLease]:
        """Unexpired leases of the rater under the rubric on any of the cases, or
        on any of the request hashes."""
        found: dict[tuple[str, str, str], PairLease] = {}
        queries = (
            ("case_id", sorted(set(case_ids))),
            ("request_hash", sorted(set(request_hashes))),
        )
        for column, values in queries:
            for chunk in chunks(values):
                rows = self._all(
                    f"SELECT {LEASES.select()} FROM judge_leases WHERE rater = ? "
                    f"AND rubric_hash = ? AND expires_at > ? AND {column} IN ({marks(len(chunk))})",
                    [rater, rubric_hash, now, *chunk],
                )
                for lease in LEASES.load_all(rows):
                    found[(lease.rubric_hash, lease.rater, lease.case_id)] = lease
        return list(found.values())

    def take_leases(
        self,
        owner: str,
        rater: str,
        rubric_hash: str,
        pairs: Iterable[tuple[str, str]],
        expires_at: float,
    ) -> int:
        """Lease (case_id, request_hash) pairs to ``owner`` (replacing expired or
        own leases: check :meth:`live_leases` first, in the same transaction)."""
        taken = now_iso()
        rows = [
            LEASES.values(
                PairLease(
                    rubric_hash=rubric_hash,
                    rater=rater,
                    case_id=case_id,
                    request_hash=request_hash,
                    owner=owner,
                    expires_at=expires_at,
                    taken_at=taken,
                )
            )
            for case_id, request_hash in pairs
        ]
        if rows:
            with self.transaction():
                self._conn.executemany(LEASES.insert_sql("INSERT OR REPLACE"), rows)
        return len(rows)

    def release_leases(
        self,
        owner: str,
        *,
        rater: str | None = None,
        rubric_hash: str | None = None,
        case_ids: Sequence[str] | None = None,
    ) -> int:
        """Delete ``owner``'s leases (all, or of one rater and rubric on some cases)."""
        if case_ids is None:
            return int(self._write("DELETE FROM judge_leases WHERE owner = ?", [owner]).rowcount)
        released = 0
        with self.transaction():
            for chunk in chunks(list(case_ids)):
                cur = self._conn.execute(
                    "DELETE FROM judge_leases WHERE owner = ? AND rater = ? AND rubric_hash = ? "
                    f"AND case_id IN ({marks(len(chunk))})",
                    [owner, rater, rubric_hash, *chunk],
                )
                released += int(cur.rowcount)
        return released

    def own_leases(
        self, owner: str, rater: str, rubric_hash: str, case_ids: Sequence[str]
    ) -> dict[str, float]:
        """``case_id -> expires_at`` of ``owner``'s leases of the rater under the
        rubric on the cases (expired ones too)."""
        found: dict[str, float] = {}
        for chunk in chunks(sorted(set(case_ids))):
            rows = self._all(
                "SELECT case_id, expires_at FROM judge_leases WHERE owner = ? AND rater = ? "
                f"AND rubric_hash = ? AND case_id IN ({marks(len(chunk))})",
                [owner, rater, rubric_hash, *chunk],
            )
            found.update((str(r[0]), float(r[1])) for r in rows)
        return found

    def renew_leases(self, owner: str, expires_at: float, now: float) -> int:
        """Extend ``owner``'s unexpired leases (and its ledger row) to ``expires_at``.
        A lease that has run out is lost, not revived: another run may have taken
        the pair meanwhile (claim it again to hold it)."""
        with self.transaction():
            self._conn.execute(
                "UPDATE budget_ledger SET expires_at = ? WHERE owner = ? AND finished_at IS NULL",
                [expires_at, owner],
            )
            cur = self._conn.execute(
                "UPDATE judge_leases SET expires_at = ? WHERE owner = ? AND expires_at > ?",
                [expires_at, owner, now],
            )
        return int(cur.rowcount)

    def live_owners(self, now: float) -> set[str]:
        """Owners that hold unexpired leases, ledger rows or batch polls."""
        rows = self._all(
            "SELECT owner FROM judge_leases WHERE expires_at > ? UNION "
            "SELECT owner FROM budget_ledger WHERE finished_at IS NULL AND expires_at > ?",
            [now, now],
        )
        owners = {str(r[0]) for r in rows}
        if self._has_table("provider_batches"):
            rows = self._all(
                "SELECT poller FROM provider_batches WHERE poller IS NOT NULL "
                "AND poll_expires_at > ?",
                [now],
            )
            owners.update(str(r[0]) for r in rows)
        return owners

    def reap_owner(self, owner: str, now: float) -> None:
        """Free what a run that is known to be gone held: its leases and its batch
        polls. Its ledger row is closed; what it still reserved counts as spent: a
        reservation is a call's worst case, taken before the call was sent, and a
        run that is gone may have been paid for calls whose results it never
        stored (they are called again by another run, and paid again)."""
        with self.transaction():
            self._conn.execute("DELETE FROM judge_leases WHERE owner = ?", [owner])
            self._conn.execute(
                "UPDATE budget_ledger SET spent_usd = spent_usd + reserved_usd, "
                "reserved_usd = 0, finished_at = ?, expires_at = MIN(expires_at, ?) "
                "WHERE owner = ? AND finished_at IS NULL",
                [now_iso(), now, owner],
            )
            if self._has_table("provider_batches"):
                self._conn.execute(
                    "UPDATE provider_batches SET poller = NULL, poll_expires_at = NULL "
                    "WHERE poller = ?",
                    [owner],
                )

    def leases(self, owner: str | None = None) -> list[PairLease]:
        """Every lease (of one owner), expired or not."""
        sql, args = f"SELECT {LEASES.select()} FROM judge_leases", []
        if owner is not None:
            sql += " WHERE owner = ?"
            args.append(owner)
        return LEASES.load_all(self._all(sql + " ORDER BY rater, case_id", args))

    # ------------------------------------------------------------------ ledger

    def open_ledger(
        self, owner: str, scope: str, max_cost_usd: float | None, expires_at: float, now: float
    ) -> str:
        """Add ``owner``'s ledger row and return its budget: the budget of a live
        run of the same scope that has one (a budget is shared while its runs
        overlap), else a new one named after ``owner``. Without ``max_cost_usd``
        the run has a budget of its own (its spending is recorded, not limited)."""
        with self.transaction():
            budget = owner
            if max_cost_usd is not None:
                row = self._one(
                    "SELECT budget FROM budget_ledger WHERE scope = ? AND finished_at IS NULL "
                    "AND expires_at > ? AND max_cost_usd IS NOT NULL ORDER BY started_at LIMIT 1",
                    [scope, now],
                )
                if row is not None:
                    budget = str(row[0])
            entry = LedgerEntry(
                owner=owner,
                budget=budget,
                scope=scope,
                max_cost_usd=max_cost_usd,
                started_at=now_iso(),
                expires_at=expires_at,
            )
            self._conn.execute(LEDGER.insert_sql(), LEDGER.values(entry))
        return budget

    def sharing_ledger(self, scope: str, owner: str, since: float) -> list[LedgerEntry]:
        """``owner``'s ledger row and the rows of the runs with a budget in ``scope``
        that may have run since ``since`` (unfinished, or known to run after it):
        the runs whose spending a budget check of ``owner`` may count."""
        rows = self._all(
            f"SELECT {LEDGER.select()} FROM budget_ledger WHERE owner = ? OR (scope = ? "
            "AND max_cost_usd IS NOT NULL AND (finished_at IS NULL OR expires_at > ?)) "
            "ORDER BY started_at, owner",
            [owner, scope, since],
        )
        return LEDGER.load_all(rows)

    def reserve_budget(self, owner: str, amount: float) -> None:
        self._write(
            "UPDATE budget_ledger SET reserved_usd = reserved_usd + ? WHERE owner = ?",
            [amount, owner],
        )

    def settle_budget(self, owner: str, reserved: float, spent: float) -> None:
        """Release ``reserved`` of ``owner``'s reservations and record ``spent``."""
        self._write(
            "UPDATE budget_ledger SET reserved_usd = MAX(0, reserved_usd - ?), "
            "spent_usd = spent_usd + ? WHERE owner = ?",
            [reserved, spent, owner],
        )

    def close_ledger(self, owner: str, now: float) -> None:
        """The run is over (at ``now``): its reservations are released, its spending
        stays."""
        self._write(
            "UPDATE budget_ledger SET reserved_usd = 0, finished_at = ?, expires_at = ? "
            "WHERE owner = ? AND finished_at IS NULL",
            [now_iso(), now, owner],
        )

    def ledger(self, budget: str | None = None) -> list[LedgerEntry]:
        """Ledger rows (of one budget), oldest first."""
        sql, args = f"SELECT {LEDGER.select()} FROM budget_ledger", []
        if budget is not None:
            sql += " WHERE budget = ?"
            args.append(budget)
        return LEDGER.load_all(self._all(sql + " ORDER BY started_at, owner", args))
