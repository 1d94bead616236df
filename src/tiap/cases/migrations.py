"""Recorded schema migrations of the workspace.

Each migration is a Python function taking the connection, registered with
:func:`migration` under the next version number; :func:`migrate` applies the
ones a workspace has not recorded, in order, each in the caller's transaction,
and records it in ``schema_migrations`` (version, name, time). Append only:
never edit a migration that has shipped (workspaces have recorded it), add a
new one. Statements are executed one by one, never split out of a script.
"""

from __future__ import annotations

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


@migration(4, "labels.reason: a code only, its detail in labels.note")
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
