"""The command line's error policy: bad input prints one line ``tiap: error: ...`` on
stderr and exits 2, never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import CliResult
from tiap.cli import main


def assert_one_line_error(proc: CliResult, *fragments: str) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tiap: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def broken_bundle(root: Path) -> Path:
    (root / "stores").mkdir(parents=True)
    (root / "bundle.toml").write_text('dataset = "x"\n[runs.r]\nstore = "s"\n')
    (root / "sources.jsonl").write_text('{"source_id": "s1", "text": "t"}\n')
    (root / "queries.jsonl").write_text(
        '{"query_id": "q1", "question": "?", "evidence": ["s1"]}\n{"query_id": "q2", \n'
    )
    (root / "stores" / "s.jsonl").write_text(
        '{"memory_id": "m", "text": "t", "source_ids": ["s1"], "raw": true, "canonical": false}\n'
    )
    return root


def test_bad_bundle_is_one_line_with_file_and_line(tiap_cli, tmp_path: Path) -> None:
    root = broken_bundle(tmp_path / "b")
    proc = tiap_cli.subprocess("cases", "extract", str(root), "--db", "w.sqlite", cwd=tmp_path)
    line = assert_one_line_error(proc, f"{root / 'queries.jsonl'}:2: malformed JSON")
    assert proc.stdout == ""
    assert line


def test_error_quoting_file_content_is_inert(tiap_cli, tmp_path: Path) -> None:
    """A message that quotes a file's content shows its controls as placeholders:
    no escape sequence of the data reaches the terminal through an error."""
    root = broken_bundle(tmp_path / "b")
    (root / "queries.jsonl").write_text(
        '{"query_id": "q1", "question": "?", "evidence": ["s1"]}\n', encoding="utf-8"
    )
    (root / "runs").mkdir()
    hostile = "m\\u001b]0;PWNED\\u0007\\u001b[31m\\u009b2J\\u202e"
    (root / "runs" / "r.jsonl").write_text(
        '{"query_id": "q1", "ranking": ["' + hostile + '"]}\n', encoding="utf-8"
    )
    proc = tiap_cli.subprocess("cases", "extract", str(root), "--db", "w.sqlite", cwd=tmp_path)
    line = assert_one_line_error(proc, "unknown memory id 'm␛]0;PWNED␇␛[31m\\x9b2J\\u202e'")
    assert line.endswith("in ranking of query 'q1' (not in store 's')")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", proc.stderr)


def test_missing_inputs(tiap_cli, tmp_path: Path) -> None:
    proc = tiap_cli.subprocess("cases", "extract", "nowhere", "--db", "w.sqlite", cwd=tmp_path)
    assert_one_line_error(proc, "nowhere: bundle directory not found")
    proc = tiap_cli.subprocess("cases", "list", "--db", "absent.sqlite", cwd=tmp_path)
    assert_one_line_error(proc, "absent.sqlite: workspace not found")
    assert not (tmp_path / "absent.sqlite").exists()


def test_not_a_workspace(tiap_cli, tmp_path: Path) -> None:
    (tmp_path / "junk.sqlite").write_bytes(b"not sqlite at all" * 64)
    proc = tiap_cli.subprocess("cases", "show", "c-1", "--db", "junk.sqlite", cwd=tmp_path)
    assert_one_line_error(proc, "not a tiap workspace")


def test_usage_errors_exit_2_without_traceback(tiap_cli, tmp_path: Path) -> None:
    proc = tiap_cli.subprocess("cases", "extract", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "missing argument 'bundle'" in proc.stderr.lower()
    proc = tiap_cli.subprocess("frobnicate", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    proc = tiap_cli.subprocess("cases", "sample", "--db", "w.sqlite", "--n", "many", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_help_and_version(tiap_cli, tmp_path: Path) -> None:
    proc = tiap_cli.subprocess("--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert "cases" in proc.stdout
    proc = tiap_cli.subprocess("cases", "--help", cwd=tmp_path)
    assert proc.returncode == 0
    for command in ("extract", "sample", "list", "show", "subsets"):
        assert command in proc.stdout
    proc = tiap_cli.subprocess("--version", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("tiap ")


def test_cases_help_does_not_import_heavy_modules(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from tiap.cli import main\n"
        "try:\n    main(['cases', '--help'])\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('litellm', 'textual', 'label_studio_sdk', 'torch') "
        "if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "HEAVY []" in proc.stdout


# In-process checks of the same policy (fast): main() raises SystemExit(2).


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["cases", "sample", "--db", "{ws}", "--n", "0"], "--n must be at least 1"),
        (["cases", "sample", "--db", "{ws}", "--n", "5", "--overlap", "9"], "cannot exceed --n"),
        (["cases", "show", "c-none", "--db", "{ws}"], "no case 'c-none'"),
        (["cases", "list", "--db", "{ws}", "--subset", "nope"], "no subset named 'nope'"),
        (["cases", "extract", "{bundle}", "--db", "{ws}", "--k", "0"], "k must be at least 1"),
        (["cases", "extract", "{bundle}", "--db", "{ws}", "--runs", "zz"], "unknown run(s) zz"),
    ],
)
def test_in_process_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    from tiap.cases.workspace import Workspace
    from tiap.traces.samples import sample_bundle_path

    ws = tmp_path / "w.sqlite"
    Workspace(ws).close()
    filled = [a.format(ws=ws, bundle=sample_bundle_path()) for a in args]
    with pytest.raises(SystemExit) as info:
        main(filled)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("tiap: error: ")
    assert fragment in err


def test_ctrl_c_exits_130_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tiap.audit
    import tiap.rescore.api

    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    # a command without a resume hint
    monkeypatch.setattr(tiap.rescore.api, "rescore_bundle", interrupt)
    from tiap.traces.samples import sample_bundle_path

    with pytest.raises(SystemExit) as exit_info:
        main(["rescore", str(sample_bundle_path()), "--out", str(tmp_path / "r")])
    assert exit_info.value.code == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "tiap: interrupted"

    # the audit says what it keeps and how to go on
    monkeypatch.setattr(tiap.audit, "run_audit", interrupt)
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--out", str(tmp_path / "demo"), "--no-progress"])
    assert exit_info.value.code == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "tiap: interrupted: finished steps, answered calls and stored labels are kept; run "
        "the same command again to go on"
    )
