"""The real terminal app in tmux: label, SIGKILL it, find every confirmed label, resume;
text from data reaches the terminal inert (no title, colour, clipboard or cursor
move of its own)."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from annotate_support import hostile_workspace, make_workspace

from tiap.cases.workspace import Workspace

pytestmark = pytest.mark.tmux


def _tiap_command() -> list[str]:
    script = Path(sys.executable).parent / "tiap"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from tiap.cli import main; main()"]


class Tmux:
    def __init__(self) -> None:
        self.socket = f"tiap-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def run(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return out.stdout

    def start(self, command: list[str]) -> None:
        self.run(
            "new-session", "-d", "-s", "annotate", "-x", "100", "-y", "40",
            "exec " + shlex.join(command),
        )  # fmt: skip

    def screen(self, *, escapes: bool = False) -> str:
        """The pane's text; ``escapes``: with the escape sequences of its cells' styles."""
        return self.run("capture-pane", *(["-e"] if escapes else []), "-p", "-t", "annotate")

    def settled(self, timeout: float = 30.0) -> str:
        """The screen (with styles) once two captures 0.3 s apart are the same."""
        deadline = time.monotonic() + timeout
        last = self.screen(escapes=True)
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.screen(escapes=True)
            if now == last:
                return now
            last = now
        pytest.fail(f"the screen kept changing; last screen:\n{last}")

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            try:
                screen = self.screen()
            except subprocess.CalledProcessError:
                screen = "(no pane)"
            if text in screen:
                return screen
            time.sleep(0.1)
        pytest.fail(f"'{text}' never appeared on the terminal; last screen:\n{screen}")

    def pane_pid(self) -> int:
        return int(self.run("display-message", "-p", "-t", "annotate", "#{pane_pid}").strip())

    def kill_server(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    t = Tmux()
    try:
        yield t
    finally:
        t.kill_server()


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} still alive after SIGKILL")


def test_sigkill_loses_no_confirmed_label_and_restart_resumes(tmp_path: Path, tmux: Tmux) -> None:
    db = make_workspace(tmp_path / "w.sqlite", 10)
    command = [*_tiap_command(), "annotate", "tui", "--db", str(db), "--rater", "alice"]
    command += ["--subset", "val"]
    tmux.start(command)
    tmux.wait_for("case 1/10 · done 0/10")
    for key, done in (("1", 1), ("3", 2), ("2", 3)):
        tmux.run("send-keys", "-t", "annotate", key)
        # the next case is drawn only after the label is committed: "confirmed"
        tmux.wait_for(f"case {done + 1}/10 · done {done}/10")
    pid = tmux.pane_pid()
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)

    with Workspace(db) as ws:
        got = [(r.case_id, r.label) for r in ws.latest_labels(raters=["alice"])]
    assert got == [("c0000", "supports"), ("c0001", "does_not_support"), ("c0002", "partial")]

    tmux.kill_server()
    tmux.start(command)
    screen = tmux.wait_for("case 4/10 · done 3/10")
    assert "query conv-26/q0003" in screen
    tmux.run("send-keys", "-t", "annotate", "q")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            tmux.screen()
        except subprocess.CalledProcessError:
            break  # the app quit and its session closed
        time.sleep(0.1)
    else:
        pytest.fail("the app did not quit on 'q'")


def _show_case(db: Path) -> tuple[str, str, str, str]:
    """Start the app on ``db`` in a tmux server of its own; (pane title, screen,
    screen with styles, paste buffers) once the first case is on screen."""
    tmux = Tmux()
    command = [*_tiap_command(), "annotate", "tui", "--db", str(db), "--rater", "alice"]
    try:
        tmux.run("new-session", "-d", "-s", "idle")
        # let applications set tmux's clipboard (OSC 52 then creates a paste buffer)
        tmux.run("set-option", "-g", "set-clipboard", "on")
        tmux.start([*command, "--subset", "val"])
        tmux.wait_for("case 1/2 · done 0/2")
        styled = tmux.settled()
        title = tmux.run("display-message", "-p", "-t", "annotate", "#{pane_title}").strip()
        return title, tmux.screen(), styled, tmux.run("list-buffers")
    finally:
        tmux.kill_server()


def test_hostile_text_does_not_drive_the_terminal(tmp_path: Path, tmux: Tmux) -> None:
    """A case whose texts carry a window-title, colour, clipboard and cursor-move
    sequence shows exactly as its twin whose texts are the placeholders: the same
    characters, the same styles, the same title, no clipboard write. (Each run has
    a tmux server of its own; the ``tmux`` fixture skips when tmux is missing.)"""
    hostile = hostile_workspace(tmp_path / "hostile.sqlite")
    shown = hostile_workspace(tmp_path / "shown.sqlite", shown=True)
    plain = _show_case(shown)
    title, screen, styled, buffers = _show_case(hostile)

    assert "PWNED" not in title
    assert "TITLE" not in title
    assert title == plain[0]
    assert buffers == ""  # OSC 52 wrote no clipboard
    for placeholder in ("␛]0;PWNED␇went", "␛[31mred␛[0m", "␛]52;c;UFdORUQ=␛\\on"):
        assert placeholder in screen
    assert "␛[3;2H␛[2Kthe" in screen
    assert "\\u202eevil\\u202c." in screen
    assert screen == plain[1]  # the stored text with placeholders, nothing moved
    assert styled == plain[2]  # no style but the app's own
