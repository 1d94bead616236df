"""Helpers for tests that run ``tiap judge`` in processes of their own, several at
once, against a loopback server in the test process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from judge_support import KEY_ENV, SECRET, TIAP, tiap_env

import tiap


def model_and_question(body: dict[str, Any]) -> str:
    """A loopback key per (model, case): one judge's request for one case."""
    from support.loopback import question_key

    return f"{body.get('model')}|{question_key(body)}"


def process_env() -> dict[str, str]:
    """The environment of a ``tiap`` process: this tree's package first, the key set."""
    env = tiap_env()
    src = str(Path(tiap.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    env[KEY_ENV] = SECRET
    return env


class TiapProcess:
    """``tiap ARGS`` in a process of its own (its own session, so that a SIGINT to
    its group reaches it as a terminal's Ctrl-C would)."""

    def __init__(self, *args: str | Path) -> None:
        self.args = [*TIAP, *map(str, args)]
        self.proc = subprocess.Popen(
            self.args,
            env=process_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.out = self.err = ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float = 300) -> int:
        self.out, self.err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.wait(60)

    def ctrl_c(self) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.wait(60)


def wait_for(
    predicate: Callable[[], bool], timeout: float, procs: Sequence[TiapProcess] = ()
) -> None:
    """Until ``predicate()``; fails when a process ends first or time runs out."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        for p in procs:
            if not p.alive():
                code = p.wait()
                pytest.fail(f"tiap ended early ({code}): {p.err[-2000:]}")
        time.sleep(0.05)
    pytest.fail("timed out")
