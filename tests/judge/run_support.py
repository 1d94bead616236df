"""Helpers for tests that run ``tiap judge`` in processes of their own, several at
once, against a loopback server in the test process."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from judge_support import KEY_ENV, SECRET

from support.cli import spawn


def model_and_question(body: dict[str, Any]) -> str:
    """A loopback key per (model, case): one judge's request for one case."""
    from support.loopback import question_key

    return f"{body.get('model')}|{question_key(body)}"


class TiapProcess:
    """``tiap ARGS`` in a process of its own (its own session, so that a SIGINT to
    its group reaches it as a terminal's Ctrl-C would)."""

    def __init__(self, *args: str | Path) -> None:
        self.args = [str(a) for a in args]
        self.proc = spawn(self.args, env={KEY_ENV: SECRET})  # the tiap_cli fixture's popen
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
