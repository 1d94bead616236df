"""How the workspace's schema migrations are registered and applied (the migrations
themselves: :mod:`tiap.cases.migrations`).

Each migration is a Python function taking the connection, registered with
:func:`migration` under the next version number; :func:`migrate` applies the
ones a workspace has not recorded, in order, each in the caller's transaction,
and records it in ``schema_migrations`` (version, name, time).
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


def run_statements(conn: sqlite3.Connection, statements: tuple[str, ...]) -> None:
    """Execute ``statements`` one by one (never split out of a script)."""
    for statement in statements:
        conn.execute(statement)
