"""The command line and workspace files: another application's file is refused
untouched, only creating commands create a workspace, a path that cannot be one is a
one-line error, and reading commands work on a read-only workspace."""

from __future__ import annotations

import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from legacy_workspace import make_earlier_workspace

from support.cli import CliResult
from support.reader import AS_READER, files, read_only
from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.cli import main
from tiap.traces.samples import sample_bundle_path


def one_line_error(proc: CliResult, *fragments: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tiap: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def _foreign(path: Path) -> None:
    """``sqlite3 f.sqlite "create table customers(id)"``."""
    if shutil.which("sqlite3"):
        subprocess.run(["sqlite3", str(path), "create table customers(id)"], check=True)
    else:
        con = sqlite3.connect(path)
        con.execute("create table customers(id)")
        con.close()


# ------------------------------------------------------------------- not ours


@pytest.mark.parametrize(
    "command",
    [
        ["cases", "list"],
        ["cases", "extract", str(sample_bundle_path())],
        ["judge", "run", "--panel", "offline"],
        ["agreement", "report", "--out", "rep"],
    ],
    ids=["cases-list", "cases-extract", "judge-run", "agreement-report"],
)
def test_another_applications_sqlite_file_is_refused_untouched(
    tiap_cli, tmp_path: Path, command: list[str]
) -> None:
    f = tmp_path / "f.sqlite"
    _foreign(f)
    before = files(tmp_path)
    assert set(before) == {"f.sqlite"}
    proc = tiap_cli(*command, "--db", "f.sqlite", cwd=tmp_path)
    one_line_error(proc, "f.sqlite: not a tiap workspace", "without tiap's tables")
    assert proc.stdout == ""
    assert files(tmp_path) == before  # same bytes, no -wal or -shm
    con = sqlite3.connect(f)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["customers"]
    con.close()


def test_a_path_that_cannot_be_a_workspace_is_one_line(tiap_cli, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("notes\n")
    (tmp_path / "adir").mkdir()
    for command in (["cases", "extract", str(sample_bundle_path())], ["cases", "list"]):
        proc = tiap_cli(*command, "--db", "afile/ws.sqlite", cwd=tmp_path)
        one_line_error(proc, "afile/ws.sqlite", "afile is not a directory")
        proc = tiap_cli(*command, "--db", "adir", cwd=tmp_path)
        one_line_error(proc, "adir: is a directory")
    assert (tmp_path / "afile").read_text() == "notes\n"
    assert list((tmp_path / "adir").iterdir()) == []


def test_an_empty_file_is_not_turned_into_a_workspace(tiap_cli, tmp_path: Path) -> None:
    (tmp_path / "w.sqlite").write_bytes(b"")
    proc = tiap_cli("cases", "extract", str(sample_bundle_path()), "--db", "w.sqlite", cwd=tmp_path)
    one_line_error(proc, "w.sqlite: not a tiap workspace (an empty file")
    assert files(tmp_path) == {"w.sqlite": b""}


# ------------------------------------------------------- only creators create


@pytest.mark.parametrize(
    "command",
    [
        ["cases", "list"],
        ["cases", "show", "c1"],
        ["cases", "subsets"],
        ["cases", "sample"],
        ["cases", "rename-rater", "a", "b", "--kind", "judge"],
        ["judge", "run", "--panel", "offline"],
        ["agreement", "report", "--out", "{tmp}/rep"],
        ["annotate", "tui", "--rater", "ann"],
    ],
    ids=lambda c: "-".join(c[:2]),
)
def test_a_missing_workspace_is_said_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    db = tmp_path / "sub" / "absent.sqlite"
    args = [a.format(tmp=tmp_path) for a in command] + ["--db", str(db)]
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == f"tiap: error: {db}: workspace not found (run 'tiap cases extract' first)\n"
    assert not (tmp_path / "sub").exists()


# -------------------------------------------------------------- read-only use


@pytest.fixture
def shared_tmp(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path``, made writable again afterwards (the tests make parts read-only)."""
    yield tmp_path
    for p in [tmp_path, *tmp_path.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)


def _judged_workspace(db: Path) -> list[str]:
    """Cases of the sample bundle, a validation subset, two judges and a person."""
    with pytest.raises(SystemExit) as info:
        main(["cases", "extract", str(sample_bundle_path()), "--db", str(db), "--json"])
    assert info.value.code in (0, None)
    with pytest.raises(SystemExit) as info:
        main(["cases", "sample", "--db", str(db), "--n", "6", "--overlap", "2", "--json"])
    assert info.value.code in (0, None)
    with Workspace(db) as ws:
        ids = ws.case_ids(subset="validation")
        labels = ("supports", "partial", "does_not_support")
        ws.add_labels(
            LabelRecord(
                case_id=cid,
                rater=rater,
                rater_kind=kind,  # type: ignore[arg-type]
                label=labels[(i + shift) % 3],
                rubric_id="contested-credit",
                rubric_hash="h",
                model="m" if kind == "judge" else None,
                panel="p" if kind == "judge" else None,
            )
            for i, cid in enumerate(ids)
            for rater, kind, shift in (("j1", "judge", 0), ("j2", "judge", 0), ("ann", "human", 1))
        )
    return ids


def test_reading_commands_work_on_a_read_only_workspace(
    tiap_cli, shared_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws_dir = shared_tmp / "ws"
    ws_dir.mkdir()
    db = ws_dir / "w.sqlite"
    ids = _judged_workspace(db)
    capsys.readouterr()
    out = shared_tmp / "out"
    out.mkdir()
    read_only(ws_dir)
    before = files(ws_dir)
    assert set(before) == {"w.sqlite"}
    mtime = db.stat().st_mtime_ns

    listed = tiap_cli.subprocess(
        "cases", "list", "--db", str(db), "--subset", "validation", cwd=out, preexec_fn=AS_READER
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip().splitlines()[-1] == "6 cases"
    shown = tiap_cli.subprocess(
        "cases", "show", ids[0], "--db", str(db), cwd=out, preexec_fn=AS_READER
    )
    assert shown.returncode == 0, shown.stderr
    assert "j1 [judge]: supports" in shown.stdout
    subsets = tiap_cli.subprocess(
        "cases", "subsets", "--db", str(db), cwd=out, preexec_fn=AS_READER
    )
    assert subsets.returncode == 0, subsets.stderr
    assert "validation: 6 cases, 2 in overlap" in subsets.stdout
    report = tiap_cli.subprocess(
        "agreement", "report", "--db", str(db), "--subset", "validation", "--out", str(out / "rep"),
        "--resamples", "0", cwd=out, preexec_fn=AS_READER,
    )  # fmt: skip
    # the judges disagree with the person: the gate applies and fails (exit 3), and the
    # report is written all the same
    assert report.returncode == 3, report.stderr
    assert (out / "rep" / "report.json").is_file()
    assert report.stderr.strip() == f"tiap: warning: {db} is read-only: the gate was not recorded"
    # a command that writes says why it cannot
    sample = tiap_cli.subprocess(
        "cases", "sample", "--db", str(db), "--name", "x", cwd=out, preexec_fn=AS_READER
    )
    one_line_error(sample, str(db), "read-only")

    assert files(ws_dir) == before  # nothing written, no -wal / -shm
    assert db.stat().st_mtime_ns == mtime

    # writable again: the same report records the gate
    for p in (ws_dir, db):
        p.chmod(0o755)
    report = tiap_cli(
        "agreement", "report", "--db", str(db), "--subset", "validation", "--out", str(out / "rep"),
        "--resamples", "0", cwd=out,
    )  # fmt: skip
    assert report.returncode == 3, report.stderr  # the failed gate, recorded
    assert f"gate recorded in {db}" in report.stdout
    with Workspace.open_readonly(db) as ws:
        assert len(ws.events("gate")) == 1


def test_an_earlier_workspace_is_read_read_only_without_migrating(
    tiap_cli, shared_tmp: Path
) -> None:
    ws_dir = shared_tmp / "ws"
    ws_dir.mkdir()
    db = ws_dir / "w.sqlite"
    make_earlier_workspace(db, 1)
    read_only(ws_dir)
    before = files(ws_dir)
    proc = tiap_cli.subprocess(
        "cases", "show", "c1", "--db", str(db), cwd=shared_tmp, preexec_fn=AS_READER
    )
    assert proc.returncode == 0, proc.stderr
    assert "ann [human]: partial" in proc.stdout
    assert "judge-a [judge]: supports" in proc.stdout
    assert files(ws_dir) == before
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    assert [r[0] for r in con.execute("SELECT version FROM schema_migrations")] == [1]
    assert con.execute("PRAGMA application_id").fetchone()[0] == 0
    con.close()


def test_a_workspace_from_a_newer_tiap_is_refused_read_only_too(tiap_cli, tmp_path: Path) -> None:
    db = tmp_path / "w.sqlite"
    Workspace(db).close()
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO schema_migrations VALUES (99, 'future', 'now')")
    con.close()
    before = files(tmp_path)
    for command in (["cases", "list"], ["cases", "sample"]):
        proc = tiap_cli(*command, "--db", "w.sqlite", cwd=tmp_path)
        one_line_error(proc, "w.sqlite: workspace schema version 99 is newer than this tiap")
    assert files(tmp_path)["w.sqlite"] == before["w.sqlite"]
