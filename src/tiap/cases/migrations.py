"""Recorded schema migrations of the workspace.

Each migration is a Python function taking the connection, registered with
:func:`migration` under the next version number; :func:`migrate` applies the
ones a workspace has not recorded, in order, each in the caller's transaction,
and records it in ``schema_migrations`` (version, name, time). Append only:
never edit a migration that has shipped (workspaces have recorded it), add a
new one. Statements are executed one by one, never split out of a script.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple

MigrationFn = Callable[[sqlite3.Connection], None]


class Migration(NamedTuple):
    version: int
    name: str
    apply: MigrationFn


MIGRATIONS: list[Migration] = []
"""Every migration, in version order (1, 2, ...)."""


def migration(version: int, name: str) -> Callable[[MigrationFn], MigrationFn]:
    """Register a migration function under ``version`` (the next free number)."""

    def register(fn: MigrationFn) -> MigrationFn:
        expected = len(MIGRATIONS) + 1
        if version != expected:
            raise RuntimeError(f"migration {fn.__name__}: version {version}, expected {expected}")
        MIGRATIONS.append(Migration(version, name, fn))
        return fn

    return register


def newest_version() -> int:
    return MIGRATIONS[-1].version


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def create_record_table(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )


def recorded_versions(conn: sqlite3.Connection) -> set[int]:
    """Versions recorded in ``schema_migrations`` (empty when the table is absent)."""
    has_table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not has_table:
        return set()
    return {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}


def migrate(conn: sqlite3.Connection, *, target: int | None = None) -> list[int]:
    """Apply and record every migration not yet recorded, up to ``target`` (default:
    the newest). Runs in the caller's transaction; returns the versions applied."""
    create_record_table(conn)
    done = recorded_versions(conn)
    applied = []
    for m in MIGRATIONS:
        if m.version in done or (target is not None and m.version > target):
            continue
        m.apply(conn)
        conn.execute(
            "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
            (m.version, m.name, _now()),
        )
        applied.append(m.version)
    return applied


def _run(conn: sqlite3.Connection, statements: tuple[str, ...]) -> None:
    for statement in statements:
        conn.execute(statement)


# ----------------------------------------------------------------------- migrations


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


@migration(9, "bundle versions: cases and subsets record theirs, retired cases and labels are kept")
def bundle_versions(conn: sqlite3.Connection) -> None:
    """Cases record the bundle version (fingerprint) they are of, and a case in no
    current version is marked retired; a retired case version is kept in
    ``case_versions`` and the labels made on it point to it. Existing rows are of no
    recorded version (NULL): live, until an extraction adopts or retires them
    (:mod:`tiap.cases.versions`)."""
    _run(
        conn,
        (
            """CREATE TABLE bundle_versions (
            scope TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('contested', 'qrels')),
            source TEXT,
            definition_json TEXT NOT NULL,
            cases INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            retired_at TEXT,
            PRIMARY KEY (scope, fingerprint)
        )""",
            """CREATE TABLE case_versions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            case_id TEXT NOT NULL REFERENCES cases(case_id),
            bundle_fingerprint TEXT,
            case_json TEXT NOT NULL,
            created_at TEXT NOT NULL,
            retired_at TEXT NOT NULL,
            retired_by TEXT NOT NULL
        )""",
            "CREATE INDEX case_versions_case ON case_versions(case_id, id)",
            "ALTER TABLE cases ADD COLUMN bundle_fingerprint TEXT",
            "ALTER TABLE cases ADD COLUMN retired_at TEXT",
            "CREATE INDEX cases_live ON cases(kind, retired_at, bundle_fingerprint)",
            "ALTER TABLE labels ADD COLUMN retired_with INTEGER REFERENCES case_versions(id)",
            "ALTER TABLE subsets ADD COLUMN bundle_fingerprint TEXT",
            "ALTER TABLE subsets ADD COLUMN stale_since TEXT",
        ),
    )


@migration(10, "probe_labels and anchor sets: probe judgments and frozen anchors, apart")
def probes_and_anchors(conn: sqlite3.Connection) -> None:
    """Probe judgments (perturbed or repeated re-judgments, a drift run's
    re-judgments) in a table of their own, which no read of the audit's labels
    touches; frozen anchor sets, which triggers keep from ever being changed."""
    frozen = "SELECT RAISE(ABORT, 'an anchor set is frozen: it is never changed')"
    _run(
        conn,
        (
            """CREATE TABLE probe_labels (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            case_id TEXT NOT NULL REFERENCES cases(case_id),
            rater TEXT NOT NULL,
            rater_kind TEXT NOT NULL CHECK (rater_kind = 'judge'),
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
            settings_hash TEXT,
            origin TEXT,
            external_id TEXT,
            created_at TEXT NOT NULL,
            cost_usd REAL,
            input_tokens INTEGER,
            output_tokens INTEGER,
            retired_with INTEGER,
            probe_kind TEXT NOT NULL CHECK (probe_kind IN
                ('order', 'verbosity', 'repeat', 'injection', 'drift')),
            probe_variant TEXT NOT NULL,
            probe_params_json TEXT NOT NULL DEFAULT '{}',
            drift_run INTEGER
        )""",
            "CREATE INDEX probe_labels_case_rater ON probe_labels(case_id, rater, id)",
            "CREATE INDEX probe_labels_request ON probe_labels(request_hash)",
            "CREATE INDEX probe_labels_drift ON probe_labels(drift_run)",
            """CREATE TABLE anchor_sets (
            name TEXT PRIMARY KEY,
            subset TEXT NOT NULL,
            rubric_id TEXT NOT NULL,
            rubric_hash TEXT NOT NULL,
            panel TEXT,
            reference TEXT,
            cases INTEGER NOT NULL,
            judges_json TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
            """CREATE TABLE anchor_cases (
            anchor TEXT NOT NULL REFERENCES anchor_sets(name),
            case_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            text_hash TEXT NOT NULL,
            reference TEXT,
            PRIMARY KEY (anchor, case_id)
        )""",
            """CREATE TABLE anchor_labels (
            anchor TEXT NOT NULL REFERENCES anchor_sets(name),
            case_id TEXT NOT NULL,
            rater TEXT NOT NULL,
            label TEXT,
            reason TEXT,
            model TEXT,
            settings_hash TEXT,
            request_hash TEXT,
            label_id INTEGER NOT NULL,
            PRIMARY KEY (anchor, case_id, rater)
        )""",
            *(
                f"CREATE TRIGGER {table}_frozen_{verb.lower()} BEFORE {verb} ON {table} "
                f"BEGIN {frozen}; END"
                for table in ("anchor_sets", "anchor_cases", "anchor_labels")
                for verb in ("UPDATE", "DELETE")
            ),
        ),
    )


#: the kind check of ``cases`` and ``bundle_versions`` before version 11, and after it
_TWO_KINDS = "kind IN ('contested', 'qrels')"
_THREE_KINDS = "kind IN ('contested', 'qrels', 'answer')"
_CREATE_TABLE = re.compile(r'^CREATE TABLE\s+(?:"([^"]+)"|(\w+))\s*\(')


def _rebuilt(conn: sqlite3.Connection, table: str, old: str, new: str) -> tuple[str, ...]:
    """The statements that rebuild ``table`` with ``old`` in its definition replaced by
    ``new`` (exactly once, else RuntimeError): a copy made from its stored definition,
    rows copied with their rowids, the old table dropped and the copy renamed (other
    tables' references to ``table`` then name the copy), its indexes and triggers
    made again."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    sql = str(row[0]) if row is not None else ""
    head = _CREATE_TABLE.match(sql)
    if head is None or sql.count(old) != 1:
        raise RuntimeError(f"migration: table {table} is not as tiap's migrations made it")
    copy = f"{table}_rebuilt"
    create = f"CREATE TABLE {copy} (" + sql[head.end() :].replace(old, new)
    names = ", ".join(str(c[1]) for c in conn.execute(f"PRAGMA table_info({table})"))
    keep = conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = ? "
        "AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name",
        (table,),
    ).fetchall()
    return (
        create,
        f"INSERT INTO {copy} (rowid, {names}) SELECT rowid, {names} FROM {table} ORDER BY rowid",
        f"DROP TABLE {table}",
        f"ALTER TABLE {copy} RENAME TO {table}",
        *(str(r[0]) for r in keep),
    )


@migration(11, "cases.kind 'answer': a run's generated answer to a query (cases.hypothesis)")
def answer_cases(conn: sqlite3.Connection) -> None:
    """A third kind of case, ``answer``: the kind checks of ``cases`` and
    ``bundle_versions`` admit it (each table rebuilt as :func:`case_kinds` rebuilt
    ``cases``), and ``cases.hypothesis`` holds the run's answer, which an answer case
    must have."""
    for table in ("cases", "bundle_versions"):
        _run(conn, _rebuilt(conn, table, _TWO_KINDS, _THREE_KINDS))
    conn.execute(
        "ALTER TABLE cases ADD COLUMN hypothesis TEXT "
        "CHECK (kind != 'answer' OR hypothesis IS NOT NULL)"
    )
