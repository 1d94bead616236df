"""`tiap annotate` on the command line: one-line errors, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from annotate_support import human_label

from tiap.cases.workspace import Workspace


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--subset", "nope"], "no subset named 'nope' (known: val)"),
        (["--rater", "adjudicated"], "reserved for adjudicated labels"),
        (["--overlap"], "--overlap needs --subset"),
        (["--rubric", "no-such-rubric"], "unknown rubric 'no-such-rubric'"),
        ([], "needs an interactive terminal"),  # pytest's stdin is not a terminal
    ],
)
def test_tui_errors_are_one_line(
    tiap_cli, ws_path: Path, capsys, args: list[str], message: str
) -> None:
    base = ["annotate", "tui", "--db", str(ws_path), "--rater", "alice"]
    assert tiap_cli(base + args).code == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert err.startswith("tiap: error: ")


def test_tui_missing_workspace_is_not_created(tiap_cli, tmp_path: Path, capsys) -> None:
    db = tmp_path / "absent.sqlite"
    assert tiap_cli("annotate", "tui", "--db", str(db), "--rater", "alice").code == 2
    assert "workspace not found" in capsys.readouterr().err
    assert not db.exists()


def test_adjudicate_with_nothing_to_adjudicate(tiap_cli, ws_path: Path, capsys) -> None:
    with Workspace(ws_path) as ws:
        ws.add_labels([human_label("c0000", "alice", "supports")])
    args = ["annotate", "tui", "--db", str(ws_path), "--rater", "carol", "--adjudicate"]
    assert tiap_cli(*args, "--subset", "val").code == 0
    assert "nothing to adjudicate" in capsys.readouterr().out


def test_labelstudio_needs_a_token(tiap_cli, ws_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    where = ["--db", str(ws_path), "--url", "http://127.0.0.1:9"]
    assert tiap_cli("annotate", "labelstudio", "push", *where).code == 2
    assert "set LABEL_STUDIO_API_KEY" in capsys.readouterr().err
    assert tiap_cli("annotate", "labelstudio", "pull", *where, "--rater-map", "oops").code == 2
    assert "expected LABEL_STUDIO_USER=RATER" in capsys.readouterr().err


def test_help_does_not_import_textual_or_the_sdk() -> None:
    code = (
        "import sys; from tiap.cli import main\n"
        "try:\n    main(['annotate', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('textual', 'label_studio_sdk', 'litellm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
