"""Provider batches in the workspace: each submission of one judge's requests,
its lines (one per distinct request) and the pairs each line answers.

A submission is recorded, with its lines and pairs, *before* anything is sent
to the provider, in the transaction that claims its pairs; from then on the
pairs belong to it (no run calls or submits them) until its results are stored
(``closed``) or it is given up before the provider ever saw it (``abandoned``).
The provider's batch id is recorded as soon as it is known; one run at a time
polls a batch (``poller``, renewed like a lease), any run may take it over.

A submission's reservation is its own row of the budget ledger (owner
``batch:<id>``, in the budget of the run that submitted it): it outlives that run
and counts against the budget until the submission's lines are stored, each line
settling its reservation with its cost in the transaction that stores it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tiap.cases.rows import BATCH_PAIRS, BATCH_REQUESTS, BATCHES, LEDGER
from tiap.cases.run_models import (
    BatchPair,
    BatchRequest,
    LedgerEntry,
    ProviderBatch,
    RequestState,
)
from tiap.cases.store import Store, chunks, marks, now_iso
from tiap.errors import TiapError

_OPEN = "state NOT IN ('closed', 'abandoned')"
#: a batch's ledger row does not expire: it is closed when the batch is over.
BATCH_LEDGER_EXPIRES = 253_402_300_799.0  # 9999-12-31
#: counters of a submission that :meth:`BatchStore.add_to_submission` increments.
_COUNTERS = frozenset({"answered", "retried", "cost_usd"})


class BatchStore(Store):
    """Provider batch records (a base of :class:`~tiap.cases.workspace.Workspace`)."""

    def record_submission(
        self,
        submission: ProviderBatch,
        requests: Sequence[BatchRequest],
        pairs: Sequence[BatchPair],
    ) -> int:
        """Store a submission with its lines and pairs; returns its id (the lines'
        and pairs' ``submission`` is set to it)."""
        with self.transaction():
            cur = self._conn.execute(BATCHES.insert_sql(), BATCHES.values(submission))
            sub_id = int(cur.lastrowid or 0)
            self._conn.executemany(
                BATCH_REQUESTS.insert_sql(),
                [
                    BATCH_REQUESTS.values(r.model_copy(update={"submission": sub_id}))
                    for r in requests
                ],
            )
            self._conn.executemany(
                BATCH_PAIRS.insert_sql(),
                [BATCH_PAIRS.values(p.model_copy(update={"submission": sub_id})) for p in pairs],
            )
        return sub_id

    def update_submission(self, sub_id: int, **fields: Any) -> None:
        """Set some columns of a submission (``updated_at`` too)."""
        unknown = set(fields) - set(BATCHES.insert_fields)
        if unknown:
            raise ValueError(f"not columns of provider_batches: {sorted(unknown)}")
        fields["updated_at"] = now_iso()
        names = sorted(fields)
        sets = ", ".join(f"{BATCHES.column[n]} = ?" for n in names)
        self._write(
            f"UPDATE provider_batches SET {sets} WHERE id = ?",
            [*(fields[n] for n in names), sub_id],
        )

    def add_to_submission(self, sub_id: int, **amounts: float) -> None:
        """Add to some counters of a submission (in the caller's transaction, with
        what they count: a resumed ingest adds to what an interrupted one stored)."""
        unknown = set(amounts) - _COUNTERS
        if unknown:
            raise ValueError(f"not counters of provider_batches: {sorted(unknown)}")
        names = sorted(amounts)
        sets = ", ".join(f"{n} = COALESCE({n}, 0) + ?" for n in names)
        self._write(
            f"UPDATE provider_batches SET {sets}, updated_at = ? WHERE id = ?",
            [*(amounts[n] for n in names), now_iso(), sub_id],
        )

    def _batch_select(self) -> str:
        """The columns of ``provider_batches`` this schema has (an older one, opened
        read-only, lacks the newer ones: they keep their defaults)."""
        present = {str(r[1]) for r in self._all("PRAGMA table_info(provider_batches)")}
        return BATCHES.select(present=present)

    def submission(self, sub_id: int) -> ProviderBatch:
        row = self._one(
            f"SELECT {self._batch_select()} FROM provider_batches WHERE id = ?", [sub_id]
        )
        if row is None:
            raise TiapError(f"{self.path}: no provider batch submission {sub_id}")
        return BATCHES.load(row)

    def find_submission(self, ref: str) -> ProviderBatch | None:
        """A submission by its number or by the provider's batch id."""
        if not self._has_table("provider_batches"):
            return None
        where, arg = ("id = ?", int(ref)) if ref.isdigit() else ("batch_id = ?", ref)
        row = self._one(f"SELECT {self._batch_select()} FROM provider_batches WHERE {where}", [arg])
        return None if row is None else BATCHES.load(row)

    def submissions(
        self,
        *,
        rater: str | None = None,
        rubric_hash: str | None = None,
        open_only: bool = False,
    ) -> list[ProviderBatch]:
        """Submissions, oldest first (of one judge, one rubric, only open ones)."""
        if not self._has_table("provider_batches"):
            return []  # a workspace of an earlier schema, opened read-only
        where, args = ["1"], []
        if rater is not None:
            where.append("rater = ?")
            args.append(rater)
        if rubric_hash is not None:
            where.append("rubric_hash = ?")
            args.append(rubric_hash)
        if open_only:
            where.append(_OPEN)
        sql = f"SELECT {self._batch_select()} FROM provider_batches WHERE {' AND '.join(where)}"
        rows = self._all(sql + " ORDER BY id", args)
        return BATCHES.load_all(rows)

    def submission_requests(self, sub_id: int) -> list[BatchRequest]:
        present = {str(r[1]) for r in self._all("PRAGMA table_info(provider_batch_requests)")}
        rows = self._all(
            f"SELECT {BATCH_REQUESTS.select(present=present)} FROM provider_batch_requests "
            "WHERE submission = ? ORDER BY rowid",
            [sub_id],
        )
        return BATCH_REQUESTS.load_all(rows)

    def submission_pairs(self, sub_id: int) -> list[BatchPair]:
        rows = self._all(
            f"SELECT {BATCH_PAIRS.select()} FROM provider_batch_pairs WHERE submission = ? "
            "ORDER BY rowid",
            [sub_id],
        )
        return BATCH_PAIRS.load_all(rows)

    def open_batch_requests(
        self, rater: str, rubric_hash: str, request_hashes: Iterable[str]
    ) -> dict[str, int]:
        """``request hash -> submission`` for the hashes that are unanswered lines of
        an open submission of the judge under the rubric."""
        found: dict[str, int] = {}
        if not self._has_table("provider_batch_requests"):
            return found
        for chunk in chunks(sorted(set(request_hashes))):
            rows = self._all(
                "SELECT r.request_hash, r.submission FROM provider_batch_requests r JOIN "
                "provider_batches b ON b.id = r.submission WHERE b.rater = ? AND "
                f"b.rubric_hash = ? AND b.{_OPEN} AND r.state = 'pending' "
                f"AND r.request_hash IN ({marks(len(chunk))})",
                [rater, rubric_hash, *chunk],
            )
            found.update((r[0], int(r[1])) for r in rows)
        return found

    def open_batch_pairs(self, rater: str, rubric_hash: str) -> dict[int, int]:
        """``submission -> pairs`` of the judge under the rubric that wait for an
        open submission's line."""
        if not self._has_table("provider_batch_pairs"):
            return {}
        rows = self._all(
            "SELECT p.submission, COUNT(*) FROM provider_batch_pairs p JOIN "
            "provider_batch_requests r ON r.submission = p.submission AND "
            "r.request_hash = p.request_hash JOIN provider_batches b ON b.id = p.submission "
            f"WHERE b.rater = ? AND b.rubric_hash = ? AND b.{_OPEN} AND r.state = 'pending' "
            "GROUP BY p.submission",
            [rater, rubric_hash],
        )
        return {int(r[0]): int(r[1]) for r in rows}

    def mark_requests(self, sub_id: int, states: Mapping[str, RequestState]) -> None:
        """Set the state of lines (by custom id); an answered or failed line's stored
        request is dropped (its ``model_calls`` row holds it now)."""
        with self.transaction():
            self._conn.executemany(
                "UPDATE provider_batch_requests SET state = ?, request_json = CASE WHEN ? "
                "THEN NULL ELSE request_json END WHERE submission = ? AND custom_id = ?",
                [
                    (state, state in ("answered", "failed"), sub_id, custom_id)
                    for custom_id, state in states.items()
                ],
            )

    # ------------------------------------------------------------------- ledger

    def open_batch_ledger(
        self,
        sub: ProviderBatch,
        *,
        budget: str,
        scope: str,
        max_cost_usd: float | None,
        reserved_usd: float,
    ) -> None:
        """Add a submission's ledger row, in ``budget``, holding ``reserved_usd``."""
        entry = LedgerEntry(
            owner=sub.ledger_owner,
            budget=budget,
            scope=scope,
            max_cost_usd=max_cost_usd,
            reserved_usd=reserved_usd,
            started_at=now_iso(),
            expires_at=BATCH_LEDGER_EXPIRES,
        )
        self._write(LEDGER.insert_sql(), LEDGER.values(entry))

    def _ensure_batch_ledger(self, sub: ProviderBatch) -> None:
        """A submission recorded before submissions had ledger rows gets one now, in
        the budget of the run that submitted it (its reservation lapsed with that run)."""
        owner = sub.ledger_owner
        if self._one("SELECT 1 FROM budget_ledger WHERE owner = ?", [owner]) is not None:
            return
        row = self._one(
            "SELECT budget, scope FROM budget_ledger WHERE owner = ?", [sub.submitted_by]
        )
        budget, scope = (str(row[0]), str(row[1])) if row is not None else (owner, owner)
        self.open_batch_ledger(sub, budget=budget, scope=scope, max_cost_usd=None, reserved_usd=0)

    def settle_batch_ledger(self, sub: ProviderBatch, reserved: float, spent: float) -> None:
        """Release ``reserved`` of a submission's reservation and record ``spent``."""
        with self.transaction():
            self._ensure_batch_ledger(sub)
            self._conn.execute(
                "UPDATE budget_ledger SET reserved_usd = MAX(0, reserved_usd - ?), "
                "spent_usd = spent_usd + ? WHERE owner = ?",
                [reserved, spent, sub.ledger_owner],
            )

    def close_batch_ledger(self, sub: ProviderBatch) -> None:
        """The submission is over: what it still reserved is released."""
        self._write(
            "UPDATE budget_ledger SET reserved_usd = 0, finished_at = ? WHERE owner = ? "
            "AND finished_at IS NULL",
            [now_iso(), sub.ledger_owner],
        )

    # ------------------------------------------------------------------ polling

    def take_poll(self, sub_id: int, owner: str, expires_at: float, now: float) -> bool:
        """Make ``owner`` the submission's poller unless a live other run is."""
        cur = self._write(
            "UPDATE provider_batches SET poller = ?, poll_expires_at = ? WHERE id = ? AND "
            f"{_OPEN} AND (poller IS NULL OR poller = ? OR poll_expires_at <= ?)",
            [owner, expires_at, sub_id, owner, now],
        )
        return cur.rowcount == 1

    def renew_polls(self, owner: str, expires_at: float) -> None:
        self._write(
            "UPDATE provider_batches SET poll_expires_at = ? WHERE poller = ?", [expires_at, owner]
        )

    def release_polls(self, owner: str) -> None:
        self._write(
            "UPDATE provider_batches SET poller = NULL, poll_expires_at = NULL WHERE poller = ?",
            [owner],
        )
