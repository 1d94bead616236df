"""The workspace's schema migrations 1 to 8 (registered in order by
:mod:`tiap.cases.migrations`; append only: a migration that has shipped is never
edited)."""

from __future__ import annotations

import sqlite3

from tiap.cases.migration_registry import migration
from tiap.cases.migration_registry import run_statements as _run


@migration(1, "initial schema")
def initial_schema(conn: sqlite3.Connection) -> None:
    _run(
        conn,
        (
            """CREATE TABLE cases (
            case_id TEXT PRIMARY KEY,
            dataset TEXT NOT NULL,
            run TEXT NOT NULL,
            store TEXT NOT NULL,
            query_id TEXT NOT NULL,
            query_index INTEGER NOT NULL,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            category TEXT,
            conversation_id TEXT,
            evidence_json TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            memory_text TEXT NOT NULL,
            memory_source_ids_json TEXT NOT NULL,
            rank INTEGER NOT NULL,
            rank_bucket TEXT NOT NULL,
            k INTEGER NOT NULL,
            metadata_json TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        )""",
            "CREATE INDEX cases_run_query ON cases(run, query_index)",
            """CREATE TABLE subsets (
            name TEXT PRIMARY KEY,
            params_json TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
            """CREATE TABLE subset_cases (
            subset TEXT NOT NULL REFERENCES subsets(name) ON DELETE CASCADE,
            case_id TEXT NOT NULL REFERENCES cases(case_id),
            position INTEGER NOT NULL,
            overlap INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (subset, case_id)
        )""",
            """CREATE TABLE labels (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            case_id TEXT NOT NULL REFERENCES cases(case_id),
            rater TEXT NOT NULL,
            rater_kind TEXT NOT NULL CHECK (rater_kind IN ('judge', 'human')),
            label TEXT,
            reason TEXT,
            rationale TEXT,
            note TEXT,
            raw TEXT,
            rubric_id TEXT,
            rubric_hash TEXT,
            panel TEXT,
            model TEXT,
            request_hash TEXT,
            origin TEXT,
            external_id TEXT UNIQUE,
            created_at TEXT NOT NULL,
            cost_usd REAL,
            input_tokens INTEGER,
            output_tokens INTEGER
        )""",
            "CREATE INDEX labels_case_rater ON labels(case_id, rater, id)",
            "CREATE INDEX labels_rater ON labels(rater, id)",
            """CREATE TABLE model_calls (
            request_hash TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            api_base TEXT,
            request_json TEXT NOT NULL,
            response_json TEXT,
            status TEXT NOT NULL,
            error TEXT,
            created_at TEXT NOT NULL,
            latency_ms REAL,
            cost_usd REAL,
            input_tokens INTEGER,
            output_tokens INTEGER
        )""",
            """CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            created_at TEXT NOT NULL,
            payload_json TEXT NOT NULL
        )""",
            "CREATE INDEX events_kind ON events(kind, id)",
        ),
    )


@migration(2, "labels.settings_hash: the judge's request settings behind a label")
def labels_settings_hash(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE labels ADD COLUMN settings_hash TEXT")


@migration(3, "labels(rater, rater_kind) index: one rater namespace, checked on every write")
def labels_rater_kind_index(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE INDEX labels_rater_kind ON labels(rater, rater_kind)")


@migration(4, "judge_leases and budget_ledger: pairs claimed before they are called, one budget")
def judge_leases_and_budget_ledger(conn: sqlite3.Connection) -> None:
    for sql in (
        """CREATE TABLE judge_leases (
            rubric_hash TEXT NOT NULL,
            rater TEXT NOT NULL,
            case_id TEXT NOT NULL,
            request_hash TEXT NOT NULL,
            owner TEXT NOT NULL,
            expires_at REAL NOT NULL,
            taken_at TEXT NOT NULL,
            PRIMARY KEY (rubric_hash, rater, case_id)
        )""",
        "CREATE INDEX judge_leases_request ON judge_leases(request_hash)",
        "CREATE INDEX judge_leases_owner ON judge_leases(owner)",
        """CREATE TABLE budget_ledger (
            owner TEXT PRIMARY KEY,
            budget TEXT NOT NULL,
            scope TEXT NOT NULL,
            max_cost_usd REAL,
            reserved_usd REAL NOT NULL DEFAULT 0,
            spent_usd REAL NOT NULL DEFAULT 0,
            started_at TEXT NOT NULL,
            expires_at REAL NOT NULL,
            finished_at TEXT
        )""",
        "CREATE INDEX budget_ledger_budget ON budget_ledger(budget)",
        "CREATE INDEX budget_ledger_scope ON budget_ledger(scope, expires_at)",
    ):
        conn.execute(sql)


@migration(5, "provider_batches: submitted provider batches, their requests and pairs")
def provider_batches(conn: sqlite3.Connection) -> None:
    for sql in (
        """CREATE TABLE provider_batches (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            batch_id TEXT UNIQUE,
            state TEXT NOT NULL,
            provider_status TEXT,
            rater TEXT NOT NULL,
            model TEXT NOT NULL,
            api_base TEXT,
            provider TEXT NOT NULL,
            panel TEXT,
            rubric_id TEXT,
            rubric_hash TEXT NOT NULL,
            settings_hash TEXT NOT NULL,
            label_epoch INTEGER NOT NULL,
            requests INTEGER NOT NULL,
            pairs INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            input_file_id TEXT,
            output_file_id TEXT,
            error_file_id TEXT,
            completed INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            answered INTEGER NOT NULL DEFAULT 0,
            retried INTEGER NOT NULL DEFAULT 0,
            reserved_usd REAL NOT NULL DEFAULT 0,
            cost_usd REAL,
            submitted_by TEXT NOT NULL,
            poller TEXT,
            poll_expires_at REAL,
            note TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            closed_at TEXT
        )""",
        "CREATE INDEX provider_batches_open ON provider_batches(rater, closed_at)",
        """CREATE TABLE provider_batch_requests (
            submission INTEGER NOT NULL REFERENCES provider_batches(id),
            custom_id TEXT NOT NULL,
            request_hash TEXT NOT NULL,
            request_json TEXT,
            state TEXT NOT NULL DEFAULT 'pending',
            PRIMARY KEY (submission, custom_id)
        )""",
        "CREATE INDEX provider_batch_requests_hash ON provider_batch_requests(request_hash)",
        """CREATE TABLE provider_batch_pairs (
            submission INTEGER NOT NULL REFERENCES provider_batches(id),
            case_id TEXT NOT NULL REFERENCES cases(case_id),
            request_hash TEXT NOT NULL,
            PRIMARY KEY (submission, case_id)
        )""",
    ):
        conn.execute(sql)


#: columns of ``cases`` that only contested credits fill: NOT NULL before version 6.
_CONTESTED_ONLY = ("rank", "k")
#: the columns version 6 adds, after the existing ones.
_KIND_COLUMNS = (
    "kind TEXT NOT NULL DEFAULT 'contested' CHECK (kind IN ('contested', 'qrels'))",
    "title TEXT",
    "grade INTEGER",
    "pair TEXT CHECK (pair IS NULL OR pair IN ('annotated', 'negative'))",
    "memory_type TEXT",
)


def _column_sql(name: str, decl_type: str, notnull: int, default: str | None, pk: int) -> str:
    parts = [name, decl_type]
    if pk:
        parts.append("PRIMARY KEY")
    if notnull and not pk and name not in _CONTESTED_ONLY:
        parts.append("NOT NULL")
    if default is not None:
        parts.append(f"DEFAULT {default}")
    return " ".join(p for p in parts if p)


@migration(6, "cases.kind: contested credits and qrels pairs, with the fields of each kind")
def case_kinds(conn: sqlite3.Connection) -> None:
    """Rebuild ``cases`` (SQLite cannot drop a NOT NULL constraint in place): every
    column it has, in order, with ``rank`` and ``k`` nullable (a qrels pair has
    neither), then the kind (existing rows are ``contested``) and the qrels pair's
    columns. Rows keep their rowids and order; indexes and triggers on the table are
    made again. The table is copied, the old one dropped and the copy renamed, the
    order that leaves the other tables' references to ``cases`` pointing at the new
    table; the workspace runs migrations with foreign keys off and checks them
    before committing (:class:`tiap.cases.store.Store`)."""
    columns = conn.execute("PRAGMA table_info(cases)").fetchall()
    names = [str(c[1]) for c in columns]
    keep = conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'cases' "
        "AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name"
    ).fetchall()
    defs = [_column_sql(str(c[1]), str(c[2]), int(c[3]), c[4], int(c[5])) for c in columns]
    checks = ["CHECK (kind != 'contested' OR (rank IS NOT NULL AND k IS NOT NULL))"]
    listed = ", ".join(names)
    _run(
        conn,
        (
            f"CREATE TABLE cases_with_kinds ({', '.join([*defs, *_KIND_COLUMNS, *checks])})",
            f"INSERT INTO cases_with_kinds (rowid, {listed}) "
            f"SELECT rowid, {listed} FROM cases ORDER BY rowid",
            "DROP TABLE cases",
            "ALTER TABLE cases_with_kinds RENAME TO cases",
            *(str(row[0]) for row in keep),
            "CREATE INDEX cases_kind ON cases(kind, dataset)",
        ),
    )


@migration(7, "labels.reason: a code only, its detail in labels.note")
def labels_reason_codes(conn: sqlite3.Connection) -> None:
    # An earlier tiap wrote a judge's out-of-rubric label as one string,
    # "label_outside_rubric: <label>"; the reason is now a closed set of codes and
    # the label given is the row's note (judge rows had no note of their own).
    conn.execute(
        "UPDATE labels SET "
        "note = COALESCE(note, trim(substr(reason, instr(reason, ':') + 1))), "
        "reason = substr(reason, 1, instr(reason, ':') - 1) "
        "WHERE rater_kind = 'judge' AND reason LIKE 'label_outside_rubric:%'"
    )


@migration(8, "provider batches: submission keys, line reservations, output tries, line counts")
def provider_batch_books(conn: sqlite3.Connection) -> None:
    # submission_key: a random key recorded before the batch is created and sent in
    # its metadata, by which a run finds a batch whose creation it did not see end.
    # fetch_failures: reads of the batch's output files that failed for good (404).
    # *_lines: lines of its output files that were malformed, repeated a custom id,
    # named a custom id not in the batch, or that the provider counted completed
    # without a result in either file. A line's reservation is what the claim
    # reserved for it (its worst case at the batch price), settled as it is stored.
    for sql in (
        "ALTER TABLE provider_batches ADD COLUMN submission_key TEXT",
        "ALTER TABLE provider_batches ADD COLUMN fetch_failures INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE provider_batches ADD COLUMN malformed_lines INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE provider_batches ADD COLUMN duplicate_lines INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE provider_batches ADD COLUMN unknown_lines INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE provider_batches ADD COLUMN missing_lines INTEGER NOT NULL DEFAULT 0",
        "CREATE UNIQUE INDEX provider_batches_key ON provider_batches(submission_key)",
        "ALTER TABLE provider_batch_requests ADD COLUMN reserved_usd REAL NOT NULL DEFAULT 0",
    ):
        conn.execute(sql)
