"""Progress of long work as plain lines, for when stderr is not a terminal.

In a CI log, under ``nohup`` or in a notebook cell, progress bars show nothing
until the end. There the commands use :class:`PlainProgress` instead: at most
one line every few seconds (``TIAP_PROGRESS_INTERVAL``, default 5) on stderr,
with what is done of the total, the rate and the time left, and no escape
sequence. ``--quiet`` (``--no-progress``) silences it like the bars.

It implements both of the library's reporter interfaces: the build's
:class:`tiap.traces.build.Reporter` (``message``, ``step``) and the judge
runner's :class:`tiap.judge.runner.Reporter` (``start``, ``advance``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from tiap.cli.output import echo
from tiap.text import inert
from tiap.traces.build import Reporter as BuildReporter

#: seconds between two progress lines, unless ``TIAP_PROGRESS_INTERVAL`` says otherwise
DEFAULT_INTERVAL = 5.0
INTERVAL_ENV = "TIAP_PROGRESS_INTERVAL"


def interval_from_env() -> float:
    """``TIAP_PROGRESS_INTERVAL`` in seconds (a positive number), else the default."""
    text = os.environ.get(INTERVAL_ENV, "")
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value > 0 and value < float("inf") else DEFAULT_INTERVAL


def plain(text: str) -> str:
    """``text`` :func:`~tiap.text.inert` on one line (whitespace runs one space): never
    an escape sequence."""
    return " ".join(inert(text).split())


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class _Meter:
    """Units done of a total since a start time, as one line of text. The rate is
    measured from the first advance on (a first bulk, e.g. cache hits, or the time
    before work begins, e.g. imports, does not skew the time left)."""

    def __init__(self, total: int | None, started: float) -> None:
        self.total = total
        self.done = 0
        self.started = started
        self._first: tuple[float, int] | None = None

    def add(self, n: int, now: float) -> None:
        self.done += n
        if self._first is None:
            self._first = (now, self.done)

    def rate(self, now: float) -> float | None:
        if self._first is None or now <= self._first[0] or self.done <= self._first[1]:
            return None
        return (self.done - self._first[1]) / (now - self._first[0])

    def line(self, now: float) -> str:
        elapsed = duration(now - self.started)
        rate = self.rate(now)
        per_s = "rate unknown" if rate is None else f"{rate:,.1f}/s"
        if not self.total:
            return f"{self.done:,} done, {per_s}, {elapsed} elapsed"
        share = 100 * self.done / self.total
        left = self.total - self.done
        eta = duration(left / rate) if rate else "unknown"
        return f"{self.done:,}/{self.total:,} ({share:.0f}%), {per_s}, {elapsed} elapsed, ETA {eta}"


class PlainProgress(BuildReporter):
    """Rate-limited progress lines on ``stream`` (stderr); step summaries (the
    build's ``message``) on stdout, as with the progress bars."""

    def __init__(
        self,
        *,
        interval: float | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        title: str = "judging",
    ) -> None:
        self.interval = interval_from_env() if interval is None else interval
        self.stream = stream
        self.clock = clock
        self.title = title
        self._last = clock()
        self._printed = False
        #: the judge run: every judge's (done, total), and the run's meter
        self._judges: dict[str, list[int]] = {}
        self._run: _Meter | None = None

    # ------------------------------------------------------------------ output

    def _write(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        print(plain(text), file=stream, flush=True)
        self._last = self.clock()
        self._printed = True

    def _due(self) -> bool:
        return self.clock() - self._last >= self.interval

    # ------------------------------------------------------- the build's reporter

    def message(self, text: str) -> None:
        echo(text)

    @contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        started = self.clock()
        self._last = started
        self._printed = False
        meter = _Meter(total, started)

        def advance(n: int) -> None:
            meter.add(n, self.clock())
            if self._due():
                self._write(f"{description}: {meter.line(self.clock())}")

        yield advance
        elapsed = self.clock() - started
        if self._printed or elapsed >= self.interval:
            done = f"{meter.done:,} " if meter.done else ""
            self._write(f"{description}: {done}done in {duration(elapsed)}")

    # ---------------------------------------------------- the judge runner's reporter

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        run = self._run
        if run is None:
            return
        elapsed = self.clock() - run.started
        if self._printed or elapsed >= self.interval:
            self._write(f"{self.title}: {run.done:,}/{run.total or 0:,} in {duration(elapsed)}")

    def start(self, judge: str, total: int) -> None:
        now = self.clock()
        if judge in self._judges:  # a judge starts once per run: this is the next run
            self.__exit__()
            self._judges, self._run, self._printed = {}, None, False
        if self._run is None:
            self._run = _Meter(0, now)
            self._last = now
        self._judges[judge] = [0, max(total, 0)]
        self._run.total = (self._run.total or 0) + max(total, 0)

    def advance(self, judge: str, n: int = 1) -> None:
        counts = self._judges.get(judge)
        if counts is None or self._run is None or not n:
            return
        counts[0] += n
        self._run.add(n, self.clock())
        if self._due():
            self._write(self._judge_line(self._run))

    def _judge_line(self, run: _Meter) -> str:
        line = f"{self.title}: {run.line(self.clock())}"
        busy = {j: c for j, c in self._judges.items() if c[1]}
        if len(busy) > 1:
            line += " (" + ", ".join(f"{j} {d:,}/{t:,}" for j, (d, t) in busy.items()) + ")"
        return line


def wanted(quiet: bool) -> bool:
    """Plain progress lines: not ``quiet`` and stderr is not a terminal."""
    return not quiet and not sys.stderr.isatty()
