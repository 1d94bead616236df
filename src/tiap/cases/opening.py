"""Finding, recognising and connecting to a workspace file.

A tiap workspace is an SQLite file marked with ``PRAGMA application_id`` =
:data:`APPLICATION_ID` (and ``user_version`` = its schema version) when it is
created. Before SQLite opens a file for tiap, the file is recognised from its
first 100 bytes (the SQLite header), so a file that is not a workspace is
refused untouched: its bytes stay the same and no ``-wal``/``-shm`` file is left.

- no file: only commands that create a workspace create one;
- an empty file, a file that is not SQLite, or an SQLite file with another
  ``application_id``: refused;
- ``application_id`` 0: a workspace of an earlier tiap (before the mark) when it
  has tiap's tables (looked at through an immutable, lock-free read that
  creates no file), else refused. It is marked on its first write-open.

While this process holds a workspace open (:func:`hold`), another handle on the
same file is not recognised again: the file is never read outside SQLite then.
Closing any descriptor of a file drops every POSIX lock the process holds on it,
SQLite's too; another process would then take the live WAL for unused, fold it
in and delete it while this one still writes to it.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections import Counter
from pathlib import Path
from typing import Literal

from tiap.errors import TiapError

APPLICATION_ID = 0x54494150
"""``PRAGMA application_id`` of a tiap workspace (the bytes of ``TIAP``)."""

SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER = 100

TIAP_TABLES = frozenset(
    {"schema_migrations", "cases", "subsets", "subset_cases", "labels", "model_calls", "events"}
)
"""The tables every tiap workspace has had since its first schema."""

FileKind = Literal["tiap", "earlier-tiap"]
Mode = Literal["ro", "rw", "rwc"]


#: workspace files this process holds open: (device, inode) -> open handles.
_HELD: Counter[tuple[int, int]] = Counter()
_HELD_LOCK = threading.Lock()


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def held(path: Path) -> bool:
    """Whether this process holds the workspace file at ``path`` open already."""
    key = _file_key(path)
    with _HELD_LOCK:
        return key is not None and _HELD[key] > 0


def hold(path: Path) -> tuple[int, int] | None:
    """A handle on ``path`` is open (give the key back to :func:`let_go`)."""
    key = _file_key(path)
    if key is not None:
        with _HELD_LOCK:
            _HELD[key] += 1
    return key


def let_go(key: tuple[int, int] | None) -> None:
    if key is not None:
        with _HELD_LOCK:
            _HELD[key] -= 1
            if _HELD[key] <= 0:
                del _HELD[key]


def _not_a_workspace(path: Path, why: str) -> TiapError:
    return TiapError(f"{path}: not a tiap workspace ({why}); tiap left it untouched")


def locate(path: Path) -> bool:
    """Whether the workspace file exists; a one-line error when ``path`` cannot be
    one (a directory, a special file, a parent that is a file)."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        for parent in path.parents:
            try:
                pst = parent.stat()
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise TiapError(f"{path}: cannot look at {parent} ({exc.strerror})") from None
            if not stat.S_ISDIR(pst.st_mode):
                raise TiapError(f"{path}: {parent} is not a directory") from None
            break
        return False
    except OSError as exc:
        raise TiapError(f"{path}: cannot look at the workspace ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise TiapError(f"{path}: is a directory, not a workspace file")
    if not stat.S_ISREG(st.st_mode):
        raise TiapError(f"{path}: not a regular file, not a workspace")
    return True


def make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TiapError(f"{path}: cannot create {path.parent} ({exc.strerror})") from None


def read_header(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(_HEADER)
    except OSError as exc:
        raise TiapError(f"{path}: cannot read the workspace ({exc.strerror})") from None


def header_ids(header: bytes) -> tuple[int, int]:
    """(application_id, user_version) from an SQLite header."""
    return int.from_bytes(header[68:72], "big"), int.from_bytes(header[60:64], "big")


def _sidecars(path: Path) -> tuple[Path, Path]:
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def _uri(path: Path, mode: Mode, *, immutable: bool = False) -> str:
    return path.absolute().as_uri() + f"?mode={mode}" + ("&immutable=1" if immutable else "")


def _tables(path: Path) -> set[str]:
    """Table names of an SQLite file, read without creating or changing any file."""
    wal, shm = _sidecars(path)
    # With a live WAL (both side files present) a plain read-only open sees its
    # content and creates nothing; otherwise an immutable open reads the file alone.
    immutable = not (wal.exists() and shm.exists())
    try:
        conn = sqlite3.connect(_uri(path, "ro", immutable=immutable), uri=True)
    except sqlite3.Error as exc:
        raise _not_a_workspace(path, f"unreadable SQLite file: {exc}") from None
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise _not_a_workspace(path, f"unreadable SQLite file: {exc}") from None
    finally:
        conn.close()


def identify(path: Path) -> FileKind:
    """Recognise an existing file as a workspace, or refuse it untouched."""
    header = read_header(path)
    if not header:
        raise _not_a_workspace(path, "an empty file; give a new path to create a workspace")
    if len(header) < _HEADER or not header.startswith(SQLITE_MAGIC):
        raise _not_a_workspace(path, "not an SQLite database")
    app_id, _ = header_ids(header)
    if app_id == APPLICATION_ID:
        return "tiap"
    if app_id != 0:
        raise _not_a_workspace(path, f"an SQLite database with application_id {app_id:#010x}")
    missing = TIAP_TABLES - _tables(path)
    if missing:
        raise _not_a_workspace(path, "an SQLite database without tiap's tables")
    return "earlier-tiap"


def _dir_writable(path: Path) -> bool:
    return os.access(path.absolute().parent, os.W_OK | os.X_OK)


def writable(path: Path) -> bool:
    """Whether an existing workspace can be opened for writing."""
    return os.access(path, os.W_OK) and (
        _dir_writable(path) or all(p.exists() for p in _sidecars(path))
    )


def _check_writable(path: Path) -> None:
    if not os.access(path, os.W_OK):
        raise TiapError(f"{path}: the workspace file is read-only, and this command writes to it")
    if not writable(path):
        raise TiapError(
            f"{path}: the workspace's directory is read-only, and this command writes to the "
            "workspace (SQLite needs its -wal and -shm files next to it)"
        )


def connect(path: Path, mode: Mode) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit).

    ``ro``: read-only (``mode=ro``; immutable when the directory cannot hold the
    WAL side files and there is no WAL, so no writer can exist), ``query_only``.
    ``rw``: an existing workspace; ``rwc``: a new one. Both with foreign keys on.
    """
    immutable = False
    if mode == "ro":
        wal, _ = _sidecars(path)
        immutable = not _dir_writable(path) and not wal.exists()
    elif mode == "rw":
        _check_writable(path)
    try:
        conn = sqlite3.connect(
            _uri(path, mode, immutable=immutable), uri=True, timeout=30.0, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise TiapError(f"{path}: cannot open the workspace ({exc})") from None
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=30000")
        if mode == "ro":
            conn.execute("PRAGMA query_only=ON")
        else:
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise TiapError(f"{path}: cannot open the workspace ({exc})") from None
    return conn
