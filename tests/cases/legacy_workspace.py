"""Workspaces as the earlier tiap left them: its schema SQL of versions 1 and 2 (as it
shipped, applied the way it applied it), recorded in ``schema_migrations``, WAL, and
no ``application_id``; with rows in every table."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

# The shipped SQL of the earlier tiap's migrations, verbatim.
EARLIER_MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema",
        """
        CREATE TABLE cases (
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
        );
        CREATE INDEX cases_run_query ON cases(run, query_index);

        CREATE TABLE subsets (
            name TEXT PRIMARY KEY,
            params_json TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE subset_cases (
            subset TEXT NOT NULL REFERENCES subsets(name) ON DELETE CASCADE,
            case_id TEXT NOT NULL REFERENCES cases(case_id),
            position INTEGER NOT NULL,
            overlap INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (subset, case_id)
        );

        CREATE TABLE labels (
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
        );
        CREATE INDEX labels_case_rater ON labels(case_id, rater, id);
        CREATE INDEX labels_rater ON labels(rater, id);

        CREATE TABLE model_calls (
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
        );

        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            created_at TEXT NOT NULL,
            payload_json TEXT NOT NULL
        );
        CREATE INDEX events_kind ON events(kind, id);
        """,
    ),
    (
        2,
        "labels.settings_hash: the judge's request settings behind a label",
        """
        ALTER TABLE labels ADD COLUMN settings_hash TEXT
        """,
    ),
]


def make_earlier_workspace(path: Path, version: int) -> None:
    """An earlier tiap's workspace at schema ``version`` (1 or 2), with data."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for v, name, sql in EARLIER_MIGRATIONS[:version]:
            conn.execute("BEGIN IMMEDIATE")
            for statement in sql.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?)", (v, name, "2026-11-01T00:00:00")
            )
            conn.execute("COMMIT")
        fill(conn)
    finally:
        conn.close()


def fill(conn: sqlite3.Connection) -> None:
    """One row in every table (two cases, two labels), through plain SQL."""
    evidence = json.dumps([{"source_id": "s1", "text": "It is here.", "speaker": "A"}])
    for i, cid in enumerate(("c1", "c2")):
        conn.execute(
            "INSERT INTO cases (case_id, dataset, run, store, query_id, query_index, question, "
            "answer, category, conversation_id, evidence_json, memory_id, memory_text, "
            "memory_source_ids_json, rank, rank_bucket, k, metadata_json, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                cid,
                "d",
                "r",
                "s",
                f"q{i}",
                i,
                "Where?",
                "Here",
                None,
                None,
                evidence,
                f"m{i}",
                "A fact.",
                '["s1"]',
                3,
                "1-5",
                60,
                '{"x": null}',
                "2026-11-01T00:00:00",
            ),
        )
    conn.execute(
        "INSERT INTO subsets (name, params_json, created_at) "
        "VALUES ('val', ?, '2026-11-01T00:00:00')",
        (json.dumps({"kind": "validation", "n": 2}),),
    )
    conn.execute("INSERT INTO subset_cases VALUES ('val', 'c1', 0, 1), ('val', 'c2', 1, 0)")
    conn.execute(
        "INSERT INTO labels (case_id, rater, rater_kind, label, rubric_hash, request_hash, "
        "created_at) VALUES ('c1', 'ann', 'human', 'partial', 'rh', NULL, 't1'), "
        "('c1', 'judge-a', 'judge', 'supports', 'rh', 'h1', 't2')"
    )
    conn.execute(
        "INSERT INTO model_calls (request_hash, model, api_base, request_json, response_json, "
        "status, created_at) VALUES ('h1', 'openai/m', NULL, '{\"messages\": []}', "
        "'{\"content\": \"x\"}', 'ok', 't2')"
    )
    conn.execute(
        "INSERT INTO events (kind, created_at, payload_json) VALUES ('cases.extract', 't0', "
        "'{\"added\": 2}')"
    )
