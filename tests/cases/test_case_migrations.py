"""Schema migrations: recorded Python functions applied in order; each one tested from
the schema before it with data in it; earlier workspaces open unchanged."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from case_support import make_label
from legacy_workspace import EARLIER_MIGRATIONS, fill, make_earlier_workspace

from tiap.cases.migrations import MIGRATIONS, migrate, newest_version, recorded_versions
from tiap.cases.opening import APPLICATION_ID, TIAP_TABLES
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _indexes(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def _snapshot(conn: sqlite3.Connection) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every data table: its columns and its rows (in rowid order)."""
    out = {}
    for table in sorted(TIAP_TABLES - {"schema_migrations"}):
        cols = _columns(conn, table)
        out[table] = (cols, conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall())
    return out


def _at_version(path: Path, version: int) -> sqlite3.Connection:
    """A raw connection on a file holding the schema at ``version`` with rows in it."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=version)
    if version >= 1:
        fill(conn)
    return conn


def test_registry_is_ordered_and_keeps_the_shipped_versions() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert newest_version() == MIGRATIONS[-1].version
    # versions 1 and 2 keep the names earlier workspaces have recorded
    assert [(m.version, m.name) for m in MIGRATIONS[:2]] == [
        (v, n) for v, n, _ in EARLIER_MIGRATIONS
    ]
    assert all(callable(m.apply) for m in MIGRATIONS)


def test_migrations_1_and_2_have_the_effect_of_the_shipped_sql(tmp_path: Path) -> None:
    new = sqlite3.connect(tmp_path / "new.sqlite", isolation_level=None)
    migrate(new, target=2)
    old = sqlite3.connect(tmp_path / "old.sqlite", isolation_level=None)
    old.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for _, _, sql in EARLIER_MIGRATIONS:
        for statement in sql.split(";"):
            if statement.strip():
                old.execute(statement)
    assert _schema(new) == _schema(old) != []
    new.close()
    old.close()


def _expect_1(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    tables = {r[0] for r in after.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables >= TIAP_TABLES
    assert "settings_hash" not in _columns(after, "labels")


def _expect_2(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    assert "settings_hash" not in _columns(before, "labels")
    assert _columns(after, "labels")[-1] == "settings_hash"
    assert (
        after.execute("SELECT COUNT(*) FROM labels WHERE settings_hash IS NULL").fetchone()[0] == 2
    )


def _expect_3(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    assert "labels_rater_kind" not in _indexes(before)
    assert "labels_rater_kind" in _indexes(after)
    plan = after.execute(
        "EXPLAIN QUERY PLAN SELECT 1 FROM labels WHERE rater = 'x' AND rater_kind = 'judge'"
    ).fetchall()
    assert "labels_rater_kind" in " ".join(str(r[-1]) for r in plan)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _expect_4(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    assert not {"judge_leases", "budget_ledger"} & _tables(before)
    assert {"judge_leases", "budget_ledger"} <= _tables(after)
    assert _columns(after, "judge_leases")[:3] == ["rubric_hash", "rater", "case_id"]
    # one lease per (rubric, judge, case): a second claim on the pair conflicts
    row = ("r", "judge-a", "c1", "h", "me", 1.0, "t")
    after.execute("INSERT INTO judge_leases VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    with pytest.raises(sqlite3.IntegrityError):
        after.execute("INSERT INTO judge_leases VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    assert {"judge_leases_request", "judge_leases_owner", "budget_ledger_budget"} <= _indexes(after)


def _expect_5(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    batch_tables = {"provider_batches", "provider_batch_requests", "provider_batch_pairs"}
    assert not batch_tables & _tables(before)
    assert batch_tables <= _tables(after)
    assert "batch_id" in _columns(after, "provider_batches")
    assert "provider_batch_requests_hash" in _indexes(after)


def _expect_6(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    old = {r[1]: r for r in before.execute("PRAGMA table_info(cases)")}
    new = {r[1]: r for r in after.execute("PRAGMA table_info(cases)")}
    assert "kind" not in old
    # every column kept, in order, then the kind and the qrels pair's columns
    assert list(new)[: len(old)] == list(old)
    assert list(new)[len(old) :] == ["kind", "title", "grade", "pair", "memory_type"]
    assert {r[1] for r in old.values() if r[3]} - {r[1] for r in new.values() if r[3]} == {
        "rank",
        "k",
    }
    assert after.execute("SELECT DISTINCT kind FROM cases").fetchall() == [("contested",)]
    assert {"cases_run_query", "cases_kind"} <= _indexes(after)
    # the other tables still refer to cases, and the references hold
    assert after.execute("PRAGMA foreign_key_check").fetchall() == []
    refs = {
        (t, r[2])
        for t in ("labels", "subset_cases")
        for r in after.execute(f"PRAGMA foreign_key_list({t})")
    }
    assert ("labels", "cases") in refs
    assert ("subset_cases", "cases") in refs
    # a qrels pair has no rank; a contested credit must have one
    cols = "case_id, dataset, run, store, query_id, query_index, question, answer, evidence_json, "
    cols += "memory_id, memory_text, memory_source_ids_json, rank_bucket, created_at, kind, pair"
    row = "'q-1', 'd', 'qrels', '', 'q', 0, 'Q?', '', '[]', 'doc', 'text', '[]', 'grade 1', 't'"
    after.execute(f"INSERT INTO cases ({cols}) VALUES ({row}, 'qrels', 'annotated')")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        after.execute(
            f"INSERT INTO cases ({cols}) VALUES ({row.replace('q-1', 'c-9')}, 'contested', NULL)"
        )
    after.execute("DELETE FROM cases WHERE case_id = 'q-1'")


def _expect_7(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    # the rows of the fill have no reason: kept as they were (checked by the caller);
    # a judge's "code: detail" reason of an earlier tiap becomes the code and a note
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn, target=6)
    fill(conn)
    conn.execute(
        "INSERT INTO labels (case_id, rater, rater_kind, label, reason, note, created_at) "
        "VALUES ('c2', 'judge-a', 'judge', NULL, 'label_outside_rubric: maybe so', NULL, 't3'), "
        "('c2', 'judge-b', 'judge', NULL, 'not_json', NULL, 't4'), "
        "('c2', 'ann', 'human', NULL, 'retracted', 'misclick: again', 't5')"
    )
    migrate(conn, target=7)
    rows = conn.execute(
        "SELECT rater, reason, note FROM labels WHERE case_id = 'c2' ORDER BY id"
    ).fetchall()
    assert rows == [
        ("judge-a", "label_outside_rubric", "maybe so"),
        ("judge-b", "not_json", None),
        ("ann", "retracted", "misclick: again"),
    ]
    conn.close()


def _expect_8(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    new = {
        "submission_key",
        "fetch_failures",
        "malformed_lines",
        "duplicate_lines",
        "unknown_lines",
        "missing_lines",
    }
    assert not new & set(_columns(before, "provider_batches"))
    assert set(_columns(after, "provider_batches")[-len(new) :]) == new
    assert _columns(after, "provider_batch_requests")[-1] == "reserved_usd"
    # a submission and a line of an earlier tiap keep their values, the new columns
    # read as nothing counted, nothing reserved, no key
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn, target=7)
    fill(conn)
    conn.execute(
        "INSERT INTO provider_batches (state, rater, model, provider, rubric_hash, "
        "settings_hash, label_epoch, requests, pairs, bytes, submitted_by, created_at, "
        "updated_at) VALUES ('submitted', 'judge-a', 'openai/m', 'openai', 'rh', 'sh', 0, 1, 1, "
        "10, 'me', 't', 't')"
    )
    conn.execute(
        "INSERT INTO provider_batch_requests (submission, custom_id, request_hash) "
        "VALUES (1, 'h1', 'h1')"
    )
    migrate(conn, target=8)
    row = conn.execute(
        "SELECT state, submission_key, fetch_failures, malformed_lines, duplicate_lines, "
        "unknown_lines, missing_lines FROM provider_batches"
    ).fetchall()
    assert row == [("submitted", None, 0, 0, 0, 0, 0)]
    assert conn.execute("SELECT state, reserved_usd FROM provider_batch_requests").fetchall() == [
        ("pending", 0.0)
    ]
    # one key names one submission
    conn.execute("UPDATE provider_batches SET submission_key = 'k'")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO provider_batches (state, rater, model, provider, rubric_hash, "
            "settings_hash, label_epoch, requests, pairs, bytes, submitted_by, created_at, "
            "updated_at, submission_key) VALUES ('prepared', 'judge-a', 'openai/m', 'openai', "
            "'rh', 'sh', 0, 1, 1, 10, 'me', 't', 't', 'k')"
        )
    conn.close()


def _expect_9(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    assert not {"bundle_versions", "case_versions"} & _tables(before)
    assert {"bundle_versions", "case_versions"} <= _tables(after)
    # the new columns come after the existing ones, and existing rows are of no
    # recorded version, live, with live labels and current subsets
    assert _columns(after, "cases")[-2:] == ["bundle_fingerprint", "retired_at"]
    assert _columns(after, "labels")[-1] == "retired_with"
    assert _columns(after, "subsets")[-2:] == ["bundle_fingerprint", "stale_since"]
    assert after.execute(
        "SELECT COUNT(*) FROM cases WHERE bundle_fingerprint IS NULL AND retired_at IS NULL"
    ).fetchone() == (2,)
    assert (
        after.execute("SELECT COUNT(*) FROM labels WHERE retired_with IS NOT NULL").fetchone()[0]
        == 0
    )
    assert after.execute("SELECT stale_since FROM subsets").fetchall() == [(None,)]
    assert {"cases_live", "case_versions_case"} <= _indexes(after)
    # one current version per (scope, fingerprint); a retired case version refers to
    # its case, and a label to the retired version it was made on
    row = "('contested', 'f1', 'contested', NULL, '{}', 2, 't', NULL)"
    after.execute(f"INSERT INTO bundle_versions VALUES {row}")
    with pytest.raises(sqlite3.IntegrityError):
        after.execute(f"INSERT INTO bundle_versions VALUES {row}")
    after.execute(
        "INSERT INTO case_versions (case_id, bundle_fingerprint, case_json, created_at, "
        "retired_at, retired_by) VALUES ('c1', NULL, '{}', 't', 't2', 'f1')"
    )
    after.execute("UPDATE labels SET retired_with = 1 WHERE case_id = 'c1'")
    assert after.execute("PRAGMA foreign_key_check").fetchall() == []
    refs = {(r[2], r[3]) for r in after.execute("PRAGMA foreign_key_list(labels)")}
    assert ("case_versions", "retired_with") in refs
    after.execute("UPDATE labels SET retired_with = NULL")
    after.execute("DELETE FROM case_versions")
    after.execute("DELETE FROM bundle_versions")


def _expect_10(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    tables = {"probe_labels", "anchor_sets", "anchor_cases", "anchor_labels"}
    assert not tables & _tables(before)
    assert tables <= _tables(after)
    # probe judgments are apart: the labels table is as it was
    assert _columns(after, "labels") == _columns(before, "labels")
    assert _columns(after, "probe_labels")[-4:] == [
        "probe_kind",
        "probe_variant",
        "probe_params_json",
        "drift_run",
    ]
    after.execute(
        "INSERT INTO probe_labels (case_id, rater, rater_kind, label, created_at, probe_kind, "
        "probe_variant) VALUES ('c1', 'judge-a', 'judge', 'supports', 't', 'repeat', 'repeat:0')"
    )
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        after.execute(
            "INSERT INTO probe_labels (case_id, rater, rater_kind, label, created_at, "
            "probe_kind, probe_variant) VALUES ('c1', 'ann', 'human', 'x', 't', 'order', 'order')"
        )
    assert after.execute("PRAGMA foreign_key_check").fetchall() == []
    after.execute("DELETE FROM probe_labels")
    # an anchor set, once written, is never changed
    after.execute(
        "INSERT INTO anchor_sets VALUES ('a1', 'val', 'r', 'rh', NULL, NULL, 1, '[]', 't')"
    )
    for sql in (
        "UPDATE anchor_sets SET subset = 'x'",
        "DELETE FROM anchor_sets",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="frozen"):
            after.execute(sql)


def _expect_11(before: sqlite3.Connection, after: sqlite3.Connection) -> None:
    old = _columns(before, "cases")
    # every column kept, in order, then the run's answer
    assert _columns(after, "cases") == [*old, "hypothesis"]
    assert _columns(after, "bundle_versions") == _columns(before, "bundle_versions")
    assert {"cases_run_query", "cases_kind", "cases_live"} <= _indexes(after)
    assert after.execute("PRAGMA foreign_key_check").fetchall() == []
    refs = {
        (t, r[2])
        for t in ("labels", "subset_cases", "case_versions")
        for r in after.execute(f"PRAGMA foreign_key_list({t})")
    }
    assert {("labels", "cases"), ("subset_cases", "cases"), ("case_versions", "cases")} <= refs
    # an answer case is admitted, with its answer; without one it is refused
    cols = "case_id, dataset, run, store, query_id, query_index, question, answer, evidence_json, "
    cols += "memory_id, memory_text, memory_source_ids_json, rank_bucket, created_at, kind"
    row = "'a-1', 'd', 'r', 's', 'q', 0, 'Q?', 'gold', '[]', '', '', '[]', 'multi-session', 't'"
    after.execute(f"INSERT INTO cases ({cols}, hypothesis) VALUES ({row}, 'answer', 'it')")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        after.execute(f"INSERT INTO cases ({cols}) VALUES ({row.replace('a-1', 'a-2')}, 'answer')")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        after.execute(f"INSERT INTO cases ({cols}) VALUES ({row.replace('a-1', 'a-3')}, 'other')")
    after.execute("DELETE FROM cases WHERE case_id = 'a-1'")
    after.execute(
        "INSERT INTO bundle_versions VALUES ('answers:r', 'f', 'answer', NULL, '{}', 1, 't', NULL)"
    )
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        after.execute(
            "INSERT INTO bundle_versions VALUES ('x', 'f', 'other', NULL, '{}', 1, 't', NULL)"
        )
    after.execute("DELETE FROM bundle_versions WHERE scope = 'answers:r'")


EXPECT: dict[int, Callable[[sqlite3.Connection, sqlite3.Connection], None]] = {
    1: _expect_1,
    2: _expect_2,
    3: _expect_3,
    4: _expect_4,
    5: _expect_5,
    6: _expect_6,
    7: _expect_7,
    8: _expect_8,
    9: _expect_9,
    10: _expect_10,
    11: _expect_11,
}


def test_every_migration_has_its_test() -> None:
    assert set(EXPECT) == {m.version for m in MIGRATIONS}


@pytest.mark.parametrize("version", [m.version for m in MIGRATIONS])
def test_each_migration_from_the_previous_schema_with_data(tmp_path: Path, version: int) -> None:
    import shutil

    path = tmp_path / "w.sqlite"
    conn = _at_version(path, version - 1)
    before_rows = _snapshot(conn) if version > 1 else {}
    conn.close()
    shutil.copyfile(path, tmp_path / "before.sqlite")
    before = sqlite3.connect(tmp_path / "before.sqlite")

    after = sqlite3.connect(path, isolation_level=None)
    after.execute("BEGIN IMMEDIATE")
    assert migrate(after, target=version) == [version]
    after.execute("COMMIT")
    assert recorded_versions(after) == set(range(1, version + 1))
    EXPECT[version](before, after)
    # the data is kept: every row, in every column the table had before
    for table, (cols, rows) in before_rows.items():
        kept = after.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall()
        assert kept == rows, table
        assert rows, table  # there was data to keep
    before.close()
    after.close()


@pytest.mark.parametrize("version", [1, 2])
def test_earlier_workspace_opens_unchanged_and_is_marked(tmp_path: Path, version: int) -> None:
    path = tmp_path / "w.sqlite"
    make_earlier_workspace(path, version)
    raw = sqlite3.connect(path)
    recorded = raw.execute("SELECT * FROM schema_migrations ORDER BY version").fetchall()
    before = _snapshot(raw)
    assert raw.execute("PRAGMA application_id").fetchone()[0] == 0
    raw.close()

    with Workspace(path) as ws:
        assert ws.case_ids() == ["c1", "c2"]
        assert ws.case("c1").evidence[0].speaker == "A"
        assert ws.case("c1").metadata == {"x": None}
        assert ws.subset_params("val") == {"kind": "validation", "n": 2}
        assert ws.overlap_ids("val") == ["c1"]
        assert {(r.rater, r.label) for r in ws.latest_labels()} == {
            ("ann", "partial"),
            ("judge-a", "supports"),
        }
        assert ws.events("cases.extract")[0]["added"] == 2
        call = ws.model_call("h1")
        assert call is not None
        assert call.response == {"content": "x"}
        assert ws.file_marks() == {
            "application_id": APPLICATION_ID,
            "user_version": newest_version(),
        }
        assert ws.schema_version() == newest_version()

    raw = sqlite3.connect(path)
    again = raw.execute("SELECT * FROM schema_migrations ORDER BY version").fetchall()
    assert again[: len(recorded)] == recorded  # the earlier records, untouched
    assert [r[0] for r in again] == [m.version for m in MIGRATIONS]
    for table, (cols, rows) in before.items():
        assert (
            raw.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall() == rows
        )
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()


def test_new_workspace_is_marked_at_creation(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    Workspace(path).close()
    header = path.read_bytes()[:100]
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID == 0x54494150
    assert int.from_bytes(header[60:64], "big") == newest_version()


def test_a_newer_user_version_is_refused_read_only_or_not(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    Workspace(path).close()
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {newest_version() + 5}")
    raw.close()
    future = newest_version() + 5
    for opener in (Workspace, Workspace.open_readonly):
        with pytest.raises(TiapError, match=f"schema version {future} is newer than this tiap"):
            opener(path)


def test_the_case_kinds_migration_keeps_references_with_foreign_keys_on(tmp_path: Path) -> None:
    """The workspace's own connection enforces foreign keys: migrating a workspace of
    the schema before case kinds, with labels and subsets on its cases, keeps every
    row and every reference, and the references are enforced afterwards."""
    path = tmp_path / "w.sqlite"
    conn = _at_version(path, 4)
    before = _snapshot(conn)
    conn.close()
    with Workspace(path) as ws:
        assert ws.schema_version() == newest_version()
        assert [c.kind for c in ws.cases()] == ["contested", "contested"]
        assert ws.case_kinds() == {"contested": 2}
        assert ws.case_ids(subset="val") == ["c1", "c2"]
        with pytest.raises(TiapError, match="no such case"):
            ws.add_label(make_label("nope", "ann", "supports"))
    raw = sqlite3.connect(path)
    for table, (cols, rows) in before.items():
        kept = raw.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall()
        assert kept == rows, table
    assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()


def test_an_unmigrated_workspace_reads_its_cases_as_contested_credits(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    _at_version(path, 4).close()
    with Workspace.open_readonly(path) as ws:
        assert [(c.case_id, c.kind) for c in ws.cases()] == [
            ("c1", "contested"),
            ("c2", "contested"),
        ]
        assert ws.cases(kind="qrels") == []
        assert ws.count_cases("contested") == 2
        assert ws.case_kinds(subset="val") == {"contested": 2}
