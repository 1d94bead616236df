"""The connection behind a :class:`~tiap.cases.workspace.Workspace`: opening
(for writing, or read-only), migrating, transactions. Only :mod:`tiap.cases`
issues SQL; the connection never leaves this package."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from tiap.cases import opening
from tiap.cases.migrations import migrate, newest_version, recorded_versions
from tiap.cases.models import EventRecord
from tiap.cases.rows import EVENTS
from tiap.errors import TiapError

T = TypeVar("T")

CHUNK = 500
"""Values per ``IN (...)`` list; longer lists are queried in chunks."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


_MS = timedelta(milliseconds=1)
_stamp_lock = threading.Lock()
_last_stamp = datetime.min.replace(tzinfo=UTC)


def label_stamp(after: str | None = None) -> str:
    """The time of a label written now, in milliseconds: later than every stamp this
    process gave before and than ``after`` (the pair's latest stored label), so a
    (case, rater) history goes forward in time even when two labels fall in one
    millisecond, and an exported history imports again."""
    global _last_stamp
    now = datetime.now(UTC)
    with _stamp_lock:
        _last_stamp = max(
            now.replace(microsecond=now.microsecond // 1000 * 1000), _last_stamp + _MS
        )
        stamp = _last_stamp
    if after:
        before = datetime.fromisoformat(after)
        stamp = max(stamp, (before if before.tzinfo else before.replace(tzinfo=UTC)) + _MS)
    return stamp.isoformat(timespec="milliseconds")


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


#: rows per multi-row ``INSERT``, at most: statements of 64, 32, ... 1 rows, so a
#: batch takes a few statements (one step each) of a few prepared shapes.
ROWS_PER_INSERT = 64


def row_runs(n: int) -> Iterator[tuple[int, int]]:
    """``(start, size)`` runs covering ``n`` rows, each a power of two at most
    :data:`ROWS_PER_INSERT`, largest first."""
    start, size = 0, ROWS_PER_INSERT
    while start < n:
        while size > n - start:
            size //= 2
        yield start, size
        start += size


def marks(n: int) -> str:
    """``?,?,?`` for ``n`` parameters."""
    return ",".join("?" for _ in range(n))


class Store:
    """Opens the file (see :mod:`tiap.cases.opening`) and owns the connection.

    For writing (the default): migrates to the newest schema and marks the file
    (``application_id``, ``user_version``) in one transaction, and switches it to
    WAL. ``create=False``: the file must exist. ``readonly=True``: ``mode=ro``, no
    migration, no mark, no WAL switch, no write (a write raises TiapError).
    Either way a workspace whose schema is newer than this tiap's is refused.
    """

    def __init__(self, path: str | Path, *, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._depth = 0
        #: bumped at each outermost transaction: what is known inside one
        self.serial = 0
        self._held: tuple[int, int] | None = None
        exists = opening.locate(self.path)
        if exists:
            if not opening.held(self.path):  # (else recognised, and never read outside SQLite)
                opening.identify(self.path)
            mode: opening.Mode = "ro" if readonly else "rw"
        elif readonly or not create:
            raise TiapError(f"{self.path}: workspace not found (run 'tiap cases extract' first)")
        else:
            opening.make_parent(self.path)
            mode = "rwc"
        self._conn = opening.connect(self.path, mode)
        try:
            if readonly:
                self._check_schema()
            else:
                self._migrate()
                if self._conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self._conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            self._conn.close()
            raise TiapError(f"{self.path}: cannot open the workspace ({exc})") from None
        except BaseException:
            self._conn.close()
            raise
        self._held = opening.hold(self.path)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._conn.close()
        key, self._held = self._held, None
        opening.let_go(key)

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one transaction (nested calls join the outer one)."""
        if self.readonly:
            raise TiapError(f"{self.path}: the workspace is open read-only")
        if self._depth == 0:
            self._conn.execute("BEGIN IMMEDIATE")
            self.serial += 1
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                self._conn.execute("ROLLBACK")
            raise
        self._depth -= 1
        if self._depth == 0:
            try:
                self._conn.execute("COMMIT")
            except BaseException:  # (a lock not had in time): nothing of it is kept
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    @contextmanager
    def traced(self) -> Iterator[list[str]]:
        """The SQL statements this handle runs inside the block, in order (to check
        what a piece of code asks of the workspace)."""
        statements: list[str] = []
        self._conn.set_trace_callback(statements.append)
        try:
            yield statements
        finally:
            self._conn.set_trace_callback(None)

    # ------------------------------------------------------------------- schema

    def _pragma(self, name: str) -> int:
        return int(self._conn.execute(f"PRAGMA {name}").fetchone()[0])

    def _check_schema(self) -> set[int]:
        """Refuse a workspace from a newer tiap (or another application); returns the
        recorded migration versions."""
        app_id = self._pragma("application_id")
        if app_id not in (0, opening.APPLICATION_ID):
            raise TiapError(f"{self.path}: not a tiap workspace (application_id {app_id:#010x})")
        done = recorded_versions(self._conn)
        current = max(done | {self._pragma("user_version")})
        newest = newest_version()
        if current > newest:
            raise TiapError(
                f"{self.path}: workspace schema version {current} is newer than this "
                f"tiap ({newest}); upgrade tiap"
            )
        return done

    def _migrate(self) -> None:
        newest = newest_version()
        done = self._check_schema()
        marked = self._pragma("application_id") == opening.APPLICATION_ID
        if marked and self._pragma("user_version") == newest and len(done) == newest:
            return
        # SQLite's procedure for schema changes: foreign keys off (it cannot change
        # inside a transaction), the changes, then foreign_key_check before COMMIT.
        self._conn.execute("PRAGMA foreign_keys=OFF")
        try:
            with self.transaction():
                done = self._check_schema()  # again, under the write lock
                if not done:
                    tables = self._conn.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table'"
                    ).fetchall()
                    if tables:
                        raise TiapError(
                            f"{self.path}: not a tiap workspace (an SQLite database without "
                            "tiap's tables)"
                        )
                migrate(self._conn)
                broken = self._conn.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise TiapError(
                        f"{self.path}: migrating would leave {len(broken)} row(s) referring "
                        f"to missing rows (first: table {broken[0][0]}); nothing was changed"
                    )
                self._conn.execute(f"PRAGMA application_id = {opening.APPLICATION_ID}")
                self._conn.execute(f"PRAGMA user_version = {newest}")
        finally:
            self._conn.execute("PRAGMA foreign_keys=ON")

    def schema_version(self) -> int:
        return int(self._conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0])

    def file_marks(self) -> dict[str, int]:
        """``application_id`` and ``user_version`` as SQLite reports them."""
        return {
            "application_id": self._pragma("application_id"),
            "user_version": self._pragma("user_version"),
        }

    # -------------------------------------------------------------------- events

    def record_event(self, kind: str, payload: dict[str, Any]) -> int:
        """Append an event (extraction, sample, gate, forced run, rename); its id."""
        event = EventRecord(kind=kind, created_at=now_iso(), payload=payload)
        return int(self._write(EVENTS.insert_sql(), EVENTS.values(event)).lastrowid or 0)

    def event_records(self, kind: str) -> list[EventRecord]:
        """Every event of a kind, oldest first."""
        return EVENTS.load_all(self._all("SELECT * FROM events WHERE kind = ? ORDER BY id", [kind]))

    def events(self, kind: str) -> list[dict[str, Any]]:
        """Payloads of every event of a kind, oldest first (with ``created_at`` added)."""
        return [{**e.payload, "created_at": e.created_at} for e in self.event_records(kind)]

    # ------------------------------------------------------------------- helpers

    def _one(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._conn.execute(sql, args).fetchone()
        return row

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self._conn.execute(sql, args).fetchall()

    def _has_table(self, name: str) -> bool:
        """Whether the schema has a table (a read-only workspace may be unmigrated)."""
        row = self._one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name])
        return row is not None

    def _insert_rows(self, sql: Callable[[int], str], rows: Sequence[Sequence[Any]]) -> int:
        """Insert ``rows`` with multi-row statements (``sql(n)``: the statement of
        ``n`` rows), in one transaction; the rows changed."""
        changed = 0
        with self.transaction():
            for start, size in row_runs(len(rows)):
                args = [v for row in rows[start : start + size] for v in row]
                changed += int(self._conn.execute(sql(size), args).rowcount)
        return changed

    def _write(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self.transaction():
            return self._conn.execute(sql, args)
