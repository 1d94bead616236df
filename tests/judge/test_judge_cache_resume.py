"""The model_calls cache and resume: re-runs make no request, a rubric edit changes
the key, a run killed with SIGKILL is completed without lost, duplicated or
repeated calls, and the API key never reaches the workspace file."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from judge_support import KEY_ENV, SECRET, execute, make_case, rows

from support.cli import run_in_process, spawn
from support.loopback import LoopbackServer, Script, label_reply
from tiap.cases import Workspace
from tiap.judge import load_panel, run_panel
from tiap.rubric import load_rubric

#: the two routes a call can take (``route`` in the panel).
ROUTES = ["openai", "litellm"]
#: the crash scenarios: on the direct route by default, on litellm's with the slow tests
CRASH_ROUTES = ["openai", pytest.param("litellm", marks=pytest.mark.slow)]


def labels_by_case(db: Path) -> dict[str, tuple[str | None, str]]:
    return {
        c: (label, h)
        for c, label, h in rows(db, "SELECT case_id, label, request_hash FROM labels ORDER BY id")
    }


def alternate(body: dict) -> object:
    """Label by the case number in the question: even supports, odd partial."""
    from support.loopback import question_key

    number = int(question_key(body).rsplit(" ", 1)[1].rstrip("?"))
    return label_reply("supports" if number % 2 == 0 else "partial")


def test_rerun_makes_no_request_and_cache_answers_without_labels(
    make_workspace, write_panel, key_env
) -> None:
    db = make_workspace(6)
    with LoopbackServer(Script(default=alternate)) as server:
        panel = load_panel(write_panel(server.url))
        rubric = load_rubric()
        with Workspace(db) as ws:
            first = run_panel(ws, panel, rubric, subset="val")
        assert server.count == 6
        before = labels_by_case(db)

        # 1) labels exist: every pair is skipped
        with Workspace(db) as ws:
            again = run_panel(ws, panel, rubric, subset="val")
        assert server.count == 6
        assert again.judges[0].already_labelled == 6
        assert again.calls == 0
        assert rows(db, "SELECT COUNT(*) FROM labels")[0][0] == 6

        # 2) labels removed, model_calls kept: answered from the cache, no request
        conn_rows = rows(db, "SELECT COUNT(*) FROM model_calls")[0][0]
        with Workspace(db) as ws:
            execute(db, "DELETE FROM labels")
            cached = run_panel(ws, panel, rubric, subset="val")
        assert server.count == 6
        assert cached.cache_hits == 6
        assert cached.calls == 0
        assert labels_by_case(db) == before
        assert rows(db, "SELECT COUNT(*) FROM model_calls")[0][0] == conn_rows
    assert first.valid == cached.valid == 6
    assert {c: lab for c, (lab, _) in before.items()} == {
        f"c{i:04d}": "supports" if i % 2 == 0 else "partial" for i in range(6)
    }


def test_editing_the_rubric_changes_the_cache_key(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, tmp_path: Path
) -> None:
    db = make_workspace(3)
    panel = load_panel(write_panel(loopback.url))
    rubric = load_rubric()
    with Workspace(db) as ws:
        run_panel(ws, panel, rubric, subset="val")
    assert loopback.count == 3

    from importlib import resources

    text = (resources.files("tiap.rubric") / "builtin" / "contested-credit.toml").read_text()
    edited = tmp_path / "edited.toml"
    edited.write_text(text.replace("by itself contains", "on its own contains"), encoding="utf-8")
    rubric2 = load_rubric(edited)
    assert rubric2.content_hash != rubric.content_hash
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, rubric2, subset="val")
    assert loopback.count == 6  # new key: called again
    assert summary.cache_hits == 0
    hashes = rows(db, "SELECT rubric_hash, COUNT(DISTINCT request_hash) FROM labels GROUP BY 1")
    assert sorted(hashes) == sorted([(rubric.content_hash, 3), (rubric2.content_hash, 3)])
    assert rows(db, "SELECT COUNT(*) FROM model_calls")[0][0] == 6


@pytest.mark.parametrize("route", ROUTES)
def test_api_key_never_reaches_the_workspace(
    make_workspace, write_panel, key_env, tmp_path: Path, route: str
) -> None:
    db = make_workspace(4)
    # the provider even echoes the key in its reply text
    script = Script(default=label_reply("supports", rationale=f"saw key {SECRET}"))
    with LoopbackServer(script) as server:
        panel = load_panel(write_panel(server.url, route=route))
        with Workspace(db) as ws:
            run_panel(ws, panel, load_rubric(), subset="val")
        assert len(server.requests) == 4
        assert all(r.authorization == f"Bearer {SECRET}" for r in server.requests)
    files = [f for f in tmp_path.iterdir() if f.name.startswith("ws.db")]
    assert files
    for f in files:
        assert SECRET.encode() not in f.read_bytes(), f.name
    raws = [r[0] for r in rows(db, "SELECT raw FROM labels")]
    assert all("[redacted]" in r for r in raws)


def _wait_for(predicate, timeout: float, proc: subprocess.Popen) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        if proc.poll() is not None:
            _out, err = proc.communicate()
            pytest.fail(f"judge run ended early ({proc.returncode}): {err[-2000:]}")
        time.sleep(0.05)
    pytest.fail("timed out waiting for the judge run")


def model_and_question(body: dict) -> str:
    from support.loopback import question_key

    return f"{body.get('model')}|{question_key(body)}"


def processes_with_env(marker: str) -> list[int]:
    """Pids of live processes whose environment holds ``marker`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0") and state != "Z":
            pids.append(int(entry.name))
    return pids


MODELS = {"a": "openai/judge-a", "b": "openai/judge-b"}


#: What ``tiap judge run`` prints on Ctrl-C, and nothing else.
INTERRUPTED = [
    "tiap: interrupted: every answered call and its label are stored; run the same "
    "command again to go on (answered calls are not repeated)"
]


class SlowRun:
    """``tiap judge run --subset val`` in a process of its own (its own session, so
    that a process-group SIGINT reaches it as a terminal's Ctrl-C would), for a
    panel (file or built-in name) whose judges may call a slow loopback ``server``."""

    def __init__(self, db: Path, panel: Path | str, server: LoopbackServer | None = None) -> None:
        self.db, self.server = db, server
        self.args = ["judge", "run", "--db", str(db), "--panel", str(panel)]
        self.args += ["--subset", "val", "--no-progress"]
        self.marker = uuid.uuid4().hex
        self.proc = spawn(self.args, env={KEY_ENV: SECRET, "TIAP_TEST_RUN": self.marker})

    def answered(self) -> int:
        if not self.db.exists():
            return 0
        return rows(self.db, "SELECT COUNT(*) FROM labels")[0][0]

    def wait_for_labels(self, n: int) -> None:
        _wait_for(lambda: self.answered() >= n, 180, self.proc)

    def ctrl_c(self) -> str:
        """SIGINT to the run's process group, as Ctrl-C; its stderr once it ended."""
        os.killpg(self.proc.pid, signal.SIGINT)
        _, err = self.proc.communicate(timeout=60)
        return err

    def processes(self) -> list[int]:
        return processes_with_env(f"TIAP_TEST_RUN={self.marker}")

    def check_stopped(self) -> set[tuple[str, str]]:
        """After the stop: no process left, every label with its call; the labels."""
        end = time.monotonic() + 30
        while self.processes() and time.monotonic() < end:
            time.sleep(0.1)
        assert self.processes() == []
        time.sleep(1.0)  # let the server finish reading requests sent before the stop
        orphans = rows(
            self.db,
            "SELECT COUNT(*) FROM labels l LEFT JOIN model_calls m USING (request_hash) "
            "WHERE m.request_hash IS NULL",
        )
        assert orphans == [(0,)]  # a label and its model_calls row commit together
        return set(rows(self.db, "SELECT case_id, rater FROM labels"))

    def resume(self) -> None:
        assert self.server is not None, "resume() needs the loopback server"
        self.server.delay_s = 0.0
        done = run_in_process(self.args, env={KEY_ENV: SECRET})
        assert done.returncode == 0, done.stderr

    def check_complete(self, n: int, done_before: set[tuple[str, str]]) -> list[tuple[str, str]]:
        """One label row per (case, judge); no answered pair asked again. Returns the
        pairs asked twice (in flight at the stop)."""
        assert self.server is not None, "check_complete() needs the loopback server"
        per_pair = rows(
            self.db, "SELECT case_id, rater, COUNT(*) FROM labels GROUP BY case_id, rater"
        )
        assert len(per_pair) == 2 * n
        assert all(count == 1 for _, _, count in per_pair)
        repeated = []
        for i in range(n):
            case_id, question = f"c{i:04d}", make_case(i).question
            for judge, model in MODELS.items():
                seen = self.server.per_key[f"{model.split('/', 1)[1]}|{question}"]
                if (case_id, judge) in done_before:
                    assert seen == 1, (case_id, judge)  # answered before the stop: never again
                else:
                    assert seen in (1, 2), (case_id, judge)
                    if seen == 2:
                        repeated.append((case_id, judge))
        return repeated


@pytest.mark.parametrize("route", CRASH_ROUTES)
def test_sigkill_mid_run_then_resume_completes_without_repeats(
    make_workspace, write_panel, key_env, route: str
) -> None:
    n = 16
    db = make_workspace(n)
    with LoopbackServer(delay_s=0.4, key=model_and_question) as server:
        panel = write_panel(server.url, judges=("a", "b"), model=MODELS, concurrency=2, route=route)
        run = SlowRun(db, panel, server)
        run.wait_for_labels(6)
        # the run is one process: its calls are made where its rows are written
        assert len(run.processes()) == 1
        os.kill(run.proc.pid, signal.SIGKILL)
        run.proc.wait()
        assert run.proc.returncode == -signal.SIGKILL
        done_before = run.check_stopped()
        assert 6 <= len(done_before) < 2 * n
        seen_before = server.count
        run.resume()
        repeated = run.check_complete(n, done_before)
    # only the calls in flight at the kill (at most 2 per judge) were sent twice
    assert len(repeated) <= 4
    assert len(repeated) == seen_before - len(done_before)


@pytest.mark.parametrize("route", CRASH_ROUTES)
def test_ctrl_c_mid_run_exits_130_then_resume_completes_without_repeats(
    make_workspace, write_panel, key_env, route: str
) -> None:
    n = 12
    db = make_workspace(n)
    with LoopbackServer(delay_s=0.4, key=model_and_question) as server:
        panel = write_panel(server.url, judges=("a", "b"), model=MODELS, concurrency=2, route=route)
        run = SlowRun(db, panel, server)
        run.wait_for_labels(4)
        err = run.ctrl_c()
        assert run.proc.returncode == 130, err
        # one line that says what was kept and how to go on, no traceback
        assert "Traceback" not in err
        assert SECRET not in err
        assert err.strip().splitlines() == INTERRUPTED
        done_before = run.check_stopped()
        assert 4 <= len(done_before) < 2 * n
        run.resume()
        repeated = run.check_complete(n, done_before)
    assert len(repeated) <= 4  # at most the calls in flight (2 per judge)


@pytest.mark.slow
def test_ctrl_c_with_in_process_offline_judges_prints_only_the_line(make_workspace) -> None:
    # The offline judges are a litellm CustomLLM: on Ctrl-C litellm leaves coroutines it
    # never awaits, which Python would report as RuntimeWarnings, one per call in flight.
    run = SlowRun(make_workspace(1000), "offline")
    run.wait_for_labels(50)
    err = run.ctrl_c()
    assert run.proc.returncode == 130, err  # 5,000 calls: far from done after 50
    assert err.strip().splitlines() == INTERRUPTED
