"""`tiap demo` where a new user runs it: into ./tiap-demo by default (ignored by git
in this repository), the path printed, exit 0; plain progress outside a terminal;
bad input exits 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_writes_tiap_demo_in_the_current_directory(demo_run) -> None:
    # tiap demo, TIAP_PROGRESS_INTERVAL=0.001, in its own process in demo_run.root:
    # once per session
    proc = demo_run.made
    assert proc.returncode == 0, proc.stderr
    out = demo_run.root / "tiap-demo"
    assert (out / "index.html").is_file()
    assert f"reports in {out.resolve()}: open {(out / 'index.html').resolve()}" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "audit complete"
    # stderr is a pipe: the judging steps' progress as plain lines, no escape sequence
    assert "judging: " in proc.stderr
    assert "\x1b" not in proc.stderr
    assert "\x1b" not in proc.stdout


def test_demo_quiet_and_bad_output_directory(tiap_cli, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a directory", encoding="utf-8")
    proc = tiap_cli("demo", "--out", "taken", "-q", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tiap: error: ")
    assert "Traceback" not in proc.stderr


def test_the_repository_ignores_the_demo_directory() -> None:
    proc = subprocess.run(
        ["git", "check-ignore", "-q", "tiap-demo/index.html"], cwd=REPO, check=False
    )
    assert proc.returncode == 0
