"""Recorded schema migrations of the workspace. Append only: never edit a
migration that has shipped; add a new one with the next version number."""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
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
