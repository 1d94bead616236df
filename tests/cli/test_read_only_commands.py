"""Commands that only read a workspace open it read-only: they work on a workspace
whose file and directory are read-only, and write nothing there."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.reader import AS_READER, files, read_only
from tiap.cli import main
from tiap.traces.samples import sample_bundle_path


@pytest.fixture
def read_only_workspace(tmp_path: Path) -> Iterator[Path]:
    """A workspace with the sample's cases and a validation subset, in a read-only
    directory (made writable again afterwards)."""
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    db = ws_dir / "w.sqlite"
    for args in (
        ["cases", "extract", str(sample_bundle_path()), "--db", str(db), "--json"],
        ["cases", "sample", "--db", str(db), "--n", "6", "--overlap", "2", "--json"],
    ):
        with pytest.raises(SystemExit) as info:
            main(args)
        assert info.value.code in (0, None)
    read_only(ws_dir)
    yield db
    for p in (ws_dir, *ws_dir.iterdir()):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_a_dry_run_reads_a_read_only_workspace(
    tiap_cli, read_only_workspace: Path, tmp_path: Path
) -> None:
    db = read_only_workspace
    before = files(db.parent)
    proc = tiap_cli.subprocess(
        "judge", "run", "--db", db, "--panel", "offline", "--subset", "validation",
        "--dry-run", "--json", cwd=tmp_path, preexec_fn=AS_READER,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["calls"] == 6 * 5  # six cases, five judges, nothing cached
    assert files(db.parent) == before  # nothing written, no -wal or -shm


def test_labelstudio_push_opens_the_workspace_read_only(
    tiap_cli, read_only_workspace: Path, tmp_path: Path
) -> None:
    db = read_only_workspace
    before = files(db.parent)
    proc = tiap_cli.subprocess(
        "annotate", "labelstudio", "push", "--db", db, "--url", "http://127.0.0.1:9",
        cwd=tmp_path, preexec_fn=AS_READER, env={"LABEL_STUDIO_API_KEY": None},
    )  # fmt: skip
    # the workspace opened (read-only); what stops the push is the missing token
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("tiap: error: set LABEL_STUDIO_API_KEY"), proc.stderr
    assert files(db.parent) == before
