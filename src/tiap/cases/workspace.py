"""The workspace: one SQLite file holding cases, subsets, every label and every
model call (DESIGN.md, "Case store").

- WAL mode, foreign keys on, schema changes only through
  :mod:`tiap.cases.migrations` (recorded in ``schema_migrations``).
- A label is never overwritten: a changed label is a new row and the latest
  row per (case, rater) wins; a human label is withdrawn by a ``retracted`` row.
- Every write commits before the call returns, unless it runs inside
  :meth:`Workspace.transaction`, which commits once at the end.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tiap.cases.migrations import MIGRATIONS
from tiap.cases.models import RETRACTED, Case, EvidenceItem, LabelRecord, RaterKind
from tiap.errors import TiapError

_LABEL_COLUMNS = [f for f in LabelRecord.model_fields if f != "id"]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


class Workspace:
    """A handle on a workspace file. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise TiapError(f"{self.path}: workspace not found (run 'tiap cases extract' first)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute("PRAGMA busy_timeout=30000")
        except sqlite3.DatabaseError as exc:
            raise TiapError(f"{self.path}: not a tiap workspace ({exc})") from None
        self._depth = 0
        self._migrate()

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Group writes into one transaction (nested calls join the outer one)."""
        if self._depth == 0:
            self.conn.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield self.conn
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                self.conn.execute("ROLLBACK")
            raise
        self._depth -= 1
        if self._depth == 0:
            self.conn.execute("COMMIT")

    def _migrate(self) -> None:
        try:
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
        except sqlite3.DatabaseError as exc:
            raise TiapError(f"{self.path}: not a tiap workspace ({exc})") from None
        done = {r[0] for r in self.conn.execute("SELECT version FROM schema_migrations")}
        newest = max(v for v, _, _ in MIGRATIONS)
        if done and max(done) > newest:
            raise TiapError(
                f"{self.path}: workspace schema version {max(done)} is newer than this "
                f"tiap ({newest}); upgrade tiap"
            )
        for version, name, sql in MIGRATIONS:
            if version in done:
                continue
            with self.transaction() as conn:
                for statement in sql.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, now_iso()),
                )

    def schema_version(self) -> int:
        return int(self.conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])

    # ---------------------------------------------------------------------- cases

    def add_cases(self, cases: Iterable[Case]) -> tuple[int, int]:
        """Insert cases not yet present; returns (added, already present)."""
        added = existing = 0
        created = now_iso()
        with self.transaction() as conn:
            for c in cases:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO cases (case_id, dataset, run, store, query_id, "
                    "query_index, question, answer, category, conversation_id, evidence_json, "
                    "memory_id, memory_text, memory_source_ids_json, rank, rank_bucket, k, "
                    "metadata_json, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        c.case_id,
                        c.dataset,
                        c.run,
                        c.store,
                        c.query_id,
                        c.query_index,
                        c.question,
                        c.answer,
                        c.category,
                        c.conversation_id,
                        _dumps([e.model_dump(exclude_none=True) for e in c.evidence]),
                        c.memory_id,
                        c.memory_text,
                        _dumps(c.memory_source_ids),
                        c.rank,
                        c.rank_bucket,
                        c.k,
                        _dumps(c.metadata),
                        created,
                    ),
                )
                if cur.rowcount:
                    added += 1
                else:
                    existing += 1
        return added, existing

    @staticmethod
    def _case(row: sqlite3.Row) -> Case:
        return Case(
            case_id=row["case_id"],
            dataset=row["dataset"],
            run=row["run"],
            store=row["store"],
            query_id=row["query_id"],
            query_index=row["query_index"],
            question=row["question"],
            answer=row["answer"],
            category=row["category"],
            conversation_id=row["conversation_id"],
            evidence=[EvidenceItem(**e) for e in json.loads(row["evidence_json"])],
            memory_id=row["memory_id"],
            memory_text=row["memory_text"],
            memory_source_ids=json.loads(row["memory_source_ids_json"]),
            rank=row["rank"],
            rank_bucket=row["rank_bucket"],
            k=row["k"],
            metadata=json.loads(row["metadata_json"]),
        )

    def case(self, case_id: str) -> Case:
        row = self.conn.execute("SELECT * FROM cases WHERE case_id = ?", (case_id,)).fetchone()
        if row is None:
            raise TiapError(f"{self.path}: no case '{case_id}'")
        return self._case(row)

    def cases(self, *, subset: str | None = None, runs: Sequence[str] | None = None) -> list[Case]:
        """Cases in a stable order: a subset's own order, else by run then query index."""
        if subset is not None:
            self._require_subset(subset)
            rows = self.conn.execute(
                "SELECT c.* FROM subset_cases s JOIN cases c USING (case_id) "
                "WHERE s.subset = ? ORDER BY s.position",
                (subset,),
            ).fetchall()
        else:
            rows = self.conn.execute(
                "SELECT * FROM cases ORDER BY run, query_index, case_id"
            ).fetchall()
        out = [self._case(r) for r in rows]
        if runs is not None:
            wanted = set(runs)
            out = [c for c in out if c.run in wanted]
        return out

    def case_ids(self, *, subset: str | None = None) -> list[str]:
        if subset is not None:
            self._require_subset(subset)
            return [
                r[0]
                for r in self.conn.execute(
                    "SELECT case_id FROM subset_cases WHERE subset = ? ORDER BY position",
                    (subset,),
                )
            ]
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT case_id FROM cases ORDER BY run, query_index, case_id"
            )
        ]

    def count_cases(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM cases").fetchone()[0])

    # -------------------------------------------------------------------- subsets

    def _require_subset(self, name: str) -> None:
        if not self.conn.execute("SELECT 1 FROM subsets WHERE name = ?", (name,)).fetchone():
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
        """Store a named subset (ordered) with its overlap members."""
        overlap_set = set(overlap)
        unknown = overlap_set - set(case_ids)
        if unknown:
            raise TiapError(f"overlap cases not in subset '{name}': {sorted(unknown)[:3]}")
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM subsets WHERE name = ?", (name,)).fetchone():
                if not replace:
                    raise TiapError(
                        f"{self.path}: subset '{name}' exists already (choose another name)"
                    )
                conn.execute("DELETE FROM subset_cases WHERE subset = ?", (name,))
                conn.execute("DELETE FROM subsets WHERE name = ?", (name,))
            conn.execute(
                "INSERT INTO subsets(name, params_json, created_at) VALUES (?, ?, ?)",
                (name, _dumps(params or {}), now_iso()),
            )
            conn.executemany(
                "INSERT INTO subset_cases(subset, case_id, position, overlap) VALUES (?,?,?,?)",
                [(name, cid, i, int(cid in overlap_set)) for i, cid in enumerate(case_ids)],
            )

    def subsets(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM subsets ORDER BY name")]

    def subset_params(self, name: str) -> dict[str, Any]:
        self._require_subset(name)
        row = self.conn.execute(
            "SELECT params_json FROM subsets WHERE name = ?", (name,)
        ).fetchone()
        return json.loads(row[0])

    def overlap_ids(self, name: str) -> list[str]:
        self._require_subset(name)
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT case_id FROM subset_cases WHERE subset = ? AND overlap = 1 "
                "ORDER BY position",
                (name,),
            )
        ]

    # --------------------------------------------------------------------- labels

    def add_label(self, record: LabelRecord) -> int:
        """Append one label row; returns its id. Commits unless in a transaction."""
        return self.add_labels([record])[0]

    def add_labels(self, records: Iterable[LabelRecord]) -> list[int]:
        """Append label rows in one transaction. Rows whose ``external_id`` is already
        stored are skipped (id ``-1``), so imports are idempotent."""
        ids: list[int] = []
        created = now_iso()
        placeholders = ",".join("?" for _ in _LABEL_COLUMNS)
        sql = f"INSERT OR IGNORE INTO labels ({', '.join(_LABEL_COLUMNS)}) VALUES ({placeholders})"
        with self.transaction() as conn:
            for rec in records:
                data = rec.model_dump()
                data["created_at"] = data["created_at"] or created
                try:
                    cur = conn.execute(sql, [data[c] for c in _LABEL_COLUMNS])
                except sqlite3.IntegrityError:
                    raise TiapError(
                        f"{self.path}: cannot label case '{rec.case_id}': no such case "
                        "in the workspace"
                    ) from None
                ids.append(int(cur.lastrowid) if cur.rowcount else -1)
        return ids

    def retract_label(self, case_id: str, rater: str, *, note: str | None = None) -> int:
        """Withdraw a human rater's current label on a case (a new ``retracted`` row)."""
        return self.add_label(
            LabelRecord(
                case_id=case_id,
                rater=rater,
                rater_kind="human",
                label=None,
                reason=RETRACTED,
                note=note,
                origin="retract",
            )
        )

    @staticmethod
    def _label(row: sqlite3.Row) -> LabelRecord:
        return LabelRecord(**{k: row[k] for k in row.keys()})  # noqa: SIM118

    def label_history(self, case_id: str, rater: str | None = None) -> list[LabelRecord]:
        """Every row for a case (optionally one rater), oldest first."""
        sql, args = "SELECT * FROM labels WHERE case_id = ?", [case_id]
        if rater is not None:
            sql += " AND rater = ?"
            args.append(rater)
        return [self._label(r) for r in self.conn.execute(sql + " ORDER BY id", args)]

    def latest_labels(
        self,
        *,
        case_ids: Iterable[str] | None = None,
        raters: Iterable[str] | None = None,
        rater_kind: RaterKind | None = None,
        include_retracted: bool = False,
    ) -> list[LabelRecord]:
        """The latest row per (case, rater), ordered by case then rater.

        Retracted human labels are left out (the case counts as unlabelled by that
        rater) unless ``include_retracted``; invalid judge labels (``label`` None)
        are kept: they are abstentions.
        """
        sql = (
            "SELECT l.* FROM labels l JOIN ("
            " SELECT case_id, rater, MAX(id) AS id FROM labels GROUP BY case_id, rater"
            ") m ON l.id = m.id"
        )
        where, args = [], []
        if rater_kind is not None:
            where.append("l.rater_kind = ?")
            args.append(rater_kind)
        if raters is not None:
            rs = list(raters)
            where.append(f"l.rater IN ({','.join('?' for _ in rs)})")
            args.extend(rs)
        if not include_retracted:
            where.append("NOT (l.label IS NULL AND COALESCE(l.reason, '') = ?)")
            args.append(RETRACTED)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY l.case_id, l.rater"
        rows = [self._label(r) for r in self.conn.execute(sql, args)]
        if case_ids is not None:
            wanted = set(case_ids)
            rows = [r for r in rows if r.case_id in wanted]
        return rows

    def raters(self, rater_kind: RaterKind | None = None) -> list[str]:
        sql, args = "SELECT DISTINCT rater FROM labels", []
        if rater_kind is not None:
            sql += " WHERE rater_kind = ?"
            args.append(rater_kind)
        return [r[0] for r in self.conn.execute(sql + " ORDER BY rater", args)]

    # ---------------------------------------------------------------- model calls

    def cached_call(self, request_hash: str) -> sqlite3.Row | None:
        """The stored ``model_calls`` row for a request hash, if any."""
        return self.conn.execute(
            "SELECT * FROM model_calls WHERE request_hash = ?", (request_hash,)
        ).fetchone()

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
        self.conn.execute(
            "INSERT INTO model_calls (request_hash, model, api_base, request_json, "
            "response_json, status, error, created_at, latency_ms, cost_usd, input_tokens, "
            "output_tokens) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT(request_hash) DO UPDATE SET response_json=excluded.response_json, "
            "status=excluded.status, error=excluded.error, created_at=excluded.created_at, "
            "latency_ms=excluded.latency_ms, cost_usd=excluded.cost_usd, "
            "input_tokens=excluded.input_tokens, output_tokens=excluded.output_tokens "
            "WHERE model_calls.status != 'ok'",
            (
                request_hash,
                model,
                api_base,
                _dumps(request),
                None if response is None else _dumps(response),
                status,
                error,
                now_iso(),
                latency_ms,
                cost_usd,
                input_tokens,
                output_tokens,
            ),
        )

    # --------------------------------------------------------------------- events

    def record_event(self, kind: str, payload: dict[str, Any]) -> int:
        cur = self.conn.execute(
            "INSERT INTO events(kind, created_at, payload_json) VALUES (?, ?, ?)",
            (kind, now_iso(), _dumps(payload)),
        )
        return int(cur.lastrowid or 0)

    def events(self, kind: str) -> list[dict[str, Any]]:
        """Payloads of every event of a kind, oldest first (with ``created_at`` added)."""
        return [
            {**json.loads(r["payload_json"]), "created_at": r["created_at"]}
            for r in self.conn.execute(
                "SELECT created_at, payload_json FROM events WHERE kind = ? ORDER BY id", (kind,)
            )
        ]
