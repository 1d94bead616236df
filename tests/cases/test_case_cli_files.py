"""The command line and workspace files: another application's file is refused
untouched, only creating commands create a workspace, a path that cannot be one is a
one-line error, and reading commands work on a read-only workspace."""

from __future__ import annotations

import ctypes
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from legacy_workspace import make_earlier_workspace

from tiap.cases.models import LabelRecord
from tiap.cases.workspace import Workspace
from tiap.cli import main
from tiap.traces.samples import sample_bundle_path

ENTRY = "import sys; from tiap.cli import main; main(sys.argv[1:])"
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _obey_file_modes() -> None:
    """In the child, before exec: root loses the capabilities that override file
    modes, so a read-only file or directory is read-only for it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_tiap(*args: str, cwd: Path, as_reader: bool = False) -> subprocess.CompletedProcess[str]:
    """The real command in a fresh interpreter; ``as_reader``: file modes apply even
    when the tests run as root."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        preexec_fn=_obey_file_modes if as_reader and os.geteuid() == 0 else None,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tiap: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def _files(directory: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(directory.iterdir()) if f.is_file()}


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
    tmp_path: Path, command: list[str]
) -> None:
    f = tmp_path / "f.sqlite"
    _foreign(f)
    before = _files(tmp_path)
    assert set(before) == {"f.sqlite"}
    proc = run_tiap(*command, "--db", "f.sqlite", cwd=tmp_path)
    one_line_error(proc, "f.sqlite: not a tiap workspace", "without tiap's tables")
    assert proc.stdout == ""
    assert _files(tmp_path) == before  # same bytes, no -wal or -shm
    con = sqlite3.connect(f)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["customers"]
    con.close()


def test_a_path_that_cannot_be_a_workspace_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("notes\n")
    (tmp_path / "adir").mkdir()
    for command in (["cases", "extract", str(sample_bundle_path())], ["cases", "list"]):
        proc = run_tiap(*command, "--db", "afile/ws.sqlite", cwd=tmp_path)
        one_line_error(proc, "afile/ws.sqlite", "afile is not a directory")
        proc = run_tiap(*command, "--db", "adir", cwd=tmp_path)
        one_line_error(proc, "adir: is a directory")
    assert (tmp_path / "afile").read_text() == "notes\n"
    assert list((tmp_path / "adir").iterdir()) == []


def test_an_empty_file_is_not_turned_into_a_workspace(tmp_path: Path) -> None:
    (tmp_path / "w.sqlite").write_bytes(b"")
    proc = run_tiap("cases", "extract", str(sample_bundle_path()), "--db", "w.sqlite", cwd=tmp_path)
    one_line_error(proc, "w.sqlite: not a tiap workspace (an empty file")
    assert _files(tmp_path) == {"w.sqlite": b""}


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


def _read_only(directory: Path) -> None:
    for f in directory.iterdir():
        f.chmod(0o444)
    directory.chmod(0o555)


def test_reading_commands_work_on_a_read_only_workspace(
    shared_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws_dir = shared_tmp / "ws"
    ws_dir.mkdir()
    db = ws_dir / "w.sqlite"
    ids = _judged_workspace(db)
    capsys.readouterr()
    out = shared_tmp / "out"
    out.mkdir()
    _read_only(ws_dir)
    before = _files(ws_dir)
    assert set(before) == {"w.sqlite"}
    mtime = db.stat().st_mtime_ns

    listed = run_tiap(
        "cases", "list", "--db", str(db), "--subset", "validation", cwd=out, as_reader=True
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip().splitlines()[-1] == "6 cases"
    shown = run_tiap("cases", "show", ids[0], "--db", str(db), cwd=out, as_reader=True)
    assert shown.returncode == 0, shown.stderr
    assert "j1 [judge]: supports" in shown.stdout
    subsets = run_tiap("cases", "subsets", "--db", str(db), cwd=out, as_reader=True)
    assert subsets.returncode == 0, subsets.stderr
    assert "validation: 6 cases, 2 in overlap" in subsets.stdout
    report = run_tiap(
        "agreement", "report", "--db", str(db), "--subset", "validation", "--out", str(out / "rep"),
        "--resamples", "0", cwd=out, as_reader=True,
    )  # fmt: skip
    # the judges disagree with the person: the gate applies and fails (exit 3), and the
    # report is written all the same
    assert report.returncode == 3, report.stderr
    assert (out / "rep" / "report.json").is_file()
    assert report.stderr.strip() == f"tiap: warning: {db} is read-only: the gate was not recorded"
    # a command that writes says why it cannot
    sample = run_tiap("cases", "sample", "--db", str(db), "--name", "x", cwd=out, as_reader=True)
    one_line_error(sample, str(db), "read-only")

    assert _files(ws_dir) == before  # nothing written, no -wal / -shm
    assert db.stat().st_mtime_ns == mtime

    # writable again: the same report records the gate
    for p in (ws_dir, db):
        p.chmod(0o755)
    report = run_tiap(
        "agreement", "report", "--db", str(db), "--subset", "validation", "--out", str(out / "rep"),
        "--resamples", "0", cwd=out,
    )  # fmt: skip
    assert report.returncode == 3, report.stderr  # the failed gate, recorded
    assert f"gate recorded in {db}" in report.stdout
    with Workspace.open_readonly(db) as ws:
        assert len(ws.events("gate")) == 1


def test_an_earlier_workspace_is_read_read_only_without_migrating(shared_tmp: Path) -> None:
    ws_dir = shared_tmp / "ws"
    ws_dir.mkdir()
    db = ws_dir / "w.sqlite"
    make_earlier_workspace(db, 1)
    _read_only(ws_dir)
    before = _files(ws_dir)
    proc = run_tiap("cases", "show", "c1", "--db", str(db), cwd=shared_tmp, as_reader=True)
    assert proc.returncode == 0, proc.stderr
    assert "ann [human]: partial" in proc.stdout
    assert "judge-a [judge]: supports" in proc.stdout
    assert _files(ws_dir) == before
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    assert [r[0] for r in con.execute("SELECT version FROM schema_migrations")] == [1]
    assert con.execute("PRAGMA application_id").fetchone()[0] == 0
    con.close()


def test_a_workspace_from_a_newer_tiap_is_refused_read_only_too(tmp_path: Path) -> None:
    db = tmp_path / "w.sqlite"
    Workspace(db).close()
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO schema_migrations VALUES (99, 'future', 'now')")
    con.close()
    before = _files(tmp_path)
    for command in (["cases", "list"], ["cases", "sample"]):
        proc = run_tiap(*command, "--db", "w.sqlite", cwd=tmp_path)
        one_line_error(proc, "w.sqlite: workspace schema version 99 is newer than this tiap")
    assert _files(tmp_path)["w.sqlite"] == before["w.sqlite"]
