"""Which files are workspaces: tiap's own (marked), an earlier tiap's (recognised),
anything else refused untouched; where a workspace can be; read-only opening."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from case_support import make_case, make_label
from legacy_workspace import make_earlier_workspace

from tiap.cases.opening import APPLICATION_ID
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError

OPENERS: dict[str, Callable[[Path], Workspace]] = {
    "create": lambda p: Workspace(p),
    "existing": lambda p: Workspace(p, create=False),
    "read-only": Workspace.open_readonly,
}


def _files(directory: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(directory.iterdir())}


def _sqlite(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    for s in statements:
        con.execute(s)
    con.close()


def _foreign_rollback(d: Path) -> Path:
    path = d / "f.sqlite"
    _sqlite(path, "CREATE TABLE customers(id)", "INSERT INTO customers VALUES (1)")
    return path


def _foreign_wal(d: Path) -> Path:
    path = d / "f.sqlite"
    _sqlite(path, "PRAGMA journal_mode=WAL", "CREATE TABLE customers(id)")
    return path


def _other_application(d: Path) -> Path:
    path = d / "f.sqlite"
    _sqlite(path, "PRAGMA application_id = 1234", "CREATE TABLE cases(x)")
    return path


def _tables_without_mark(d: Path) -> Path:
    """tiap's table names but not all of them, and no mark: not a workspace."""
    path = d / "f.sqlite"
    _sqlite(path, "CREATE TABLE cases(x)", "CREATE TABLE labels(y)")
    return path


def _empty_sqlite(d: Path) -> Path:
    path = d / "f.sqlite"
    _sqlite(path, "PRAGMA user_version = 7")
    return path


def _not_sqlite(d: Path) -> Path:
    path = d / "f.sqlite"
    path.write_bytes(b"id,name\n1,ann\n" * 50)
    return path


def _empty_file(d: Path) -> Path:
    path = d / "f.sqlite"
    path.write_bytes(b"")
    return path


FOREIGN = {
    "sqlite-rollback": (_foreign_rollback, "without tiap's tables"),
    "sqlite-wal": (_foreign_wal, "without tiap's tables"),
    "other-application-id": (_other_application, "application_id 0x000004d2"),
    "some-tiap-table-names": (_tables_without_mark, "without tiap's tables"),
    "sqlite-no-tables": (_empty_sqlite, "without tiap's tables"),
    "not-sqlite": (_not_sqlite, "not an SQLite database"),
    "empty-file": (_empty_file, "an empty file"),
}


@pytest.mark.parametrize("opener", list(OPENERS))
@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_file_that_is_not_a_workspace_is_refused_untouched(
    tmp_path: Path, kind: str, opener: str
) -> None:
    make, why = FOREIGN[kind]
    path = make(tmp_path)
    before = _files(tmp_path)
    mtime = path.stat().st_mtime_ns
    with pytest.raises(TiapError, match="not a tiap workspace") as err:
        OPENERS[opener](path)
    assert why in str(err.value)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)
    assert _files(tmp_path) == before  # same bytes, no -wal / -shm left
    assert path.stat().st_mtime_ns == mtime


def test_a_foreign_database_in_use_with_a_live_wal_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "f.sqlite"
    owner = sqlite3.connect(path, isolation_level=None)
    owner.execute("PRAGMA journal_mode=WAL")
    owner.execute("PRAGMA wal_autocheckpoint=0")
    owner.execute("CREATE TABLE customers(id)")
    owner.execute("INSERT INTO customers VALUES (1)")
    before = _files(tmp_path)
    assert set(before) == {"f.sqlite", "f.sqlite-wal", "f.sqlite-shm"}
    with pytest.raises(TiapError, match="without tiap's tables"):
        Workspace(path)
    after = _files(tmp_path)
    assert after["f.sqlite"] == before["f.sqlite"]
    assert after["f.sqlite-wal"] == before["f.sqlite-wal"]
    assert owner.execute("SELECT id FROM customers").fetchall() == [(1,)]
    owner.close()


@pytest.mark.parametrize("opener", list(OPENERS))
def test_a_directory_or_a_path_under_a_file_is_one_line_naming_it(
    tmp_path: Path, opener: str
) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(TiapError, match="is a directory") as err:
        OPENERS[opener](tmp_path / "adir")
    assert str(tmp_path / "adir") in str(err.value)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for target in (afile / "ws.sqlite", afile / "deeper" / "ws.sqlite"):
        with pytest.raises(TiapError, match=f"{afile} is not a directory") as err:
            OPENERS[opener](target)
        assert str(target) in str(err.value)
    assert afile.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]


def test_only_creating_opens_create(tmp_path: Path) -> None:
    for opener in ("existing", "read-only"):
        with pytest.raises(TiapError, match="workspace not found"):
            OPENERS[opener](tmp_path / "sub" / "absent.sqlite")
    assert list(tmp_path.iterdir()) == []
    with Workspace(tmp_path / "sub" / "new.sqlite") as ws:
        assert ws.count_cases() == 0
    assert (tmp_path / "sub" / "new.sqlite").is_file()


def _workspace(path: Path) -> Path:
    with Workspace(path) as ws:
        ws.add_cases([make_case("c1"), make_case("c2", query_index=1)])
        ws.add_label(make_label("c1", "ann", "partial"))
        ws.save_subset("val", ["c1", "c2"], overlap=["c1"], params={"kind": "validation"})
    return path


def test_read_only_opening_writes_nothing(tmp_path: Path) -> None:
    path = _workspace(tmp_path / "w.sqlite")
    before = _files(tmp_path)
    assert set(before) == {"w.sqlite"}
    mtime = path.stat().st_mtime_ns
    with Workspace.open_readonly(path) as ws:
        assert ws.readonly
        assert ws.case_ids(subset="val") == ["c1", "c2"]
        assert [r.label for r in ws.latest_labels(case_ids=["c1"])] == ["partial"]
        writes: list[Callable[[], object]] = [
            lambda: ws.add_cases([make_case("c3")]),
            lambda: ws.add_label(make_label("c2", "ann", "supports")),
            lambda: ws.retract_label("c1", "ann"),
            lambda: ws.record_event("x", {}),
            lambda: ws.save_subset("other", ["c1"]),
            lambda: ws.rename_rater("ann", "bob", "human"),
            lambda: ws.store_call(
                request_hash="h", model="m", api_base=None, request={}, response={}, status="ok"
            ),
        ]
        for write in writes:
            with pytest.raises(TiapError, match="open read-only"):
                write()
        assert ws.events("x") == []
    assert _files(tmp_path)["w.sqlite"] == before["w.sqlite"]
    assert path.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("version", [1, 2])
def test_read_only_opening_of_an_earlier_workspace_neither_migrates_nor_marks(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "w.sqlite"
    make_earlier_workspace(path, version)
    before = path.read_bytes()
    with Workspace.open_readonly(path) as ws:
        assert ws.schema_version() == version
        assert ws.file_marks() == {"application_id": 0, "user_version": 0}
        # labels read although an earlier schema may lack a column (settings_hash)
        labels = {r.rater: r for r in ws.latest_labels()}
        assert labels["judge-a"].request_hash == "h1"
        assert labels["judge-a"].settings_hash is None
        assert ws.subset_params("val")["kind"] == "validation"
    assert path.read_bytes() == before
    # the first write-open marks it
    with Workspace(path) as ws:
        assert ws.file_marks()["application_id"] == APPLICATION_ID


def test_two_handles_on_one_new_path_both_open(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    with Workspace(path) as a, Workspace(path) as b:
        a.add_cases([make_case("c1")])
        assert b.case_ids() == ["c1"]
    assert os.path.getsize(path) > 0
