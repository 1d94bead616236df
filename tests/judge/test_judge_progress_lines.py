"""Outside a terminal (stderr a pipe), ``tiap judge run`` prints plain progress lines
while it works: rate-limited, with no escape sequence; ``--quiet`` prints none."""

from __future__ import annotations

import itertools
import re
import subprocess
import threading
import time

from support.loopback import LoopbackServer, Script

LINE = re.compile(
    r"^judging: (\d+)/(\d+) \(\d+%\), ([\d.,]+/s|rate unknown), \S+ elapsed, ETA \S+$"
)
CASES = 24
DELAY = 0.2
INTERVAL = 1.0


def _lines(proc: subprocess.Popen[str]) -> tuple[int, list[tuple[float, str]]]:
    """A command's exit status and, as they arrived, its stderr lines with the time."""
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stderr is not None
        for text in proc.stderr:
            lines.append((time.monotonic(), text.rstrip("\n")))

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(timeout=300)
    proc.wait(timeout=60)
    return proc.returncode, lines


def test_plain_progress_lines_while_judging(tiap_cli, make_workspace, write_panel, key_env) -> None:
    db = make_workspace(CASES)
    env = {"TIAP_PROGRESS_INTERVAL": str(INTERVAL)}
    with LoopbackServer(Script(), delay_s=DELAY) as server:
        panel = write_panel(server.url, concurrency=1)
        # the command with stderr a pipe, read line by line as it works
        args = ["judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val"]
        code, lines = _lines(
            tiap_cli.popen(*args, env=env, stdout=subprocess.DEVNULL, new_session=False)
        )
        assert code == 0, lines
        assert server.count == CASES
    progress = [(t, m) for t, m in lines if LINE.match(m)]
    assert len(progress) >= 2, lines
    for _, text in lines:
        assert "\x1b" not in text
        assert "\r" not in text
    # printed during the work: lines with part of the total done, arriving over time
    partial = [m for _, m in progress if int(LINE.match(m)[1]) < CASES]  # type: ignore[index]
    assert len(partial) >= 2
    assert all(int(LINE.match(m)[2]) == CASES for _, m in progress)  # type: ignore[index]
    # rate-limited: about one a second, never a line per call
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(progress)]
    assert all(g >= INTERVAL * 0.8 for g in gaps), gaps
    assert len(progress) <= CASES * DELAY / INTERVAL + 2
    # and a closing line
    assert re.match(rf"^judging: {CASES}/{CASES} in \S+$", lines[-1][1]), lines


def test_quiet_prints_no_progress(tiap_cli, make_workspace, write_panel, key_env) -> None:
    db = make_workspace(8)
    env = {"TIAP_PROGRESS_INTERVAL": "0.05"}
    with LoopbackServer(Script(), delay_s=0.1) as server:
        panel = write_panel(server.url)
        args = ["judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val", "-q"]
        code, _, err = tiap_cli(*args, env=env)
    lines = err.splitlines()
    assert code == 0, lines
    assert [m for m in lines if m.startswith("judging")] == []
