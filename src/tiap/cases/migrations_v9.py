"""The workspace's schema migrations from 9 on (registered in order by
:mod:`tiap.cases.migrations`; append only: a new migration goes at the end of this
module, and one that has shipped is never edited)."""

from __future__ import annotations

import re
import sqlite3

# the earlier versions register first, whoever imports this module
from tiap.cases import migrations_v1_8  # noqa: F401
from tiap.cases.migration_registry import migration
from tiap.cases.migration_registry import run_statements as _run


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
