"""Progress as a person sees it: the one display of :class:`tiap.progress.Reporter`.

Every command that shows progress (``traces build``, ``traces import``, ``judge
run``, ``audit``, ``demo``) opens :func:`progress_reporter` and hands what it
yields to the library:

- on a terminal, :class:`RichProgress`: a bar per step while it runs, a bar per
  part (judge) and per provider batch for the whole run, on stderr;
- elsewhere (a CI log, ``nohup``, a notebook cell), :class:`PlainProgress`: at
  most one line every few seconds (``TIAP_PROGRESS_INTERVAL``, default 5) on
  stderr, with what is done of the total, the rate and the time left, and no
  escape sequence (progress bars show nothing there until the end);
- with ``--quiet`` (``--no-progress``): nothing (:class:`tiap.progress.NoReporter`).

Step summaries (:meth:`~tiap.progress.Reporter.message`) go to stdout through
:func:`tiap.cli.output.echo`. Every name and text shown is made inert.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from tiap.cli.output import console, echo
from tiap.progress import Advance, NoReporter, Reporter
from tiap.text import inert

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

    def seconds_left(self, now: float) -> float | None:
        """The time left at the rate so far (None: no rate yet)."""
        rate = self.rate(now)
        if not self.total:
            return None
        return (self.total - self.done) / rate if rate else None

    def line(self, now: float, *, parts: list[_Meter] | None = None) -> str:
        """The meter as text; with ``parts`` (that run side by side and make up this
        meter), the time left is theirs (:func:`parts_left`), else this meter's."""
        elapsed = duration(now - self.started)
        rate = self.rate(now)
        per_s = "rate unknown" if rate is None else f"{rate:,.1f}/s"
        if not self.total:
            return f"{self.done:,} done, {per_s}, {elapsed} elapsed"
        share = 100 * self.done / self.total
        left = self.seconds_left(now) if parts is None else parts_left(parts, now)
        eta = "unknown" if left is None else duration(left)
        return f"{self.done:,}/{self.total:,} ({share:.0f}%), {per_s}, {elapsed} elapsed, ETA {eta}"


def parts_left(parts: list[_Meter], now: float) -> float | None:
    """The time left of parts that run side by side: the longest of the unfinished
    parts' own times left, each at its own rate (a fast part that is done, or
    answered from the cache, does not make a slow one look close to its end); None
    while an unfinished part has no rate yet."""
    longest = 0.0
    for part in parts:
        if not part.total or part.done >= part.total:
            continue
        left = part.seconds_left(now)
        if left is None:
            return None
        longest = max(longest, left)
    return longest


#: unfinished parts a plain progress line names (the rest are counted)
PARTS_SHOWN = 6


class PlainProgress(Reporter):
    """Rate-limited progress lines on ``stream`` (stderr); step summaries on stdout,
    as with the bars. A step's lines are named after it; the parts of a run
    (judges) are summed on one line named after the run (``title`` for parts
    started outside :meth:`parts`), closed with a line when the run ends: its
    block ends, the display closes (``with``) or a part starts again."""

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
        self._name = title
        self._last = clock()
        self._printed = False
        #: the run: every part's meter, and the run's
        self._parts: dict[str, _Meter] = {}
        self._run: _Meter | None = None
        #: the status last shown of each provider batch
        self._batches: dict[str, str] = {}

    # ------------------------------------------------------------------ output

    def _write(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        print(plain(text), file=stream, flush=True)
        self._last = self.clock()
        self._printed = True

    def _due(self) -> bool:
        return self.clock() - self._last >= self.interval

    # ------------------------------------------------------------------ steps

    def message(self, text: str) -> None:
        echo(text)

    @contextmanager
    def step(self, name: str, total: int | None) -> Iterator[Advance]:
        started = self.clock()
        self._last = started
        self._printed = False
        meter = _Meter(total, started)

        def advance(n: int) -> None:
            meter.add(n, self.clock())
            if self._due():
                self._write(f"{name}: {meter.line(self.clock())}")

        yield advance
        elapsed = self.clock() - started
        if self._printed or elapsed >= self.interval:
            done = f"{meter.done:,} " if meter.done else ""
            self._write(f"{name}: {done}done in {duration(elapsed)}")

    # ------------------------------------------------------- parts side by side

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_run()

    def _end_run(self) -> None:
        """The closing line of the run (when it printed or took an interval)."""
        run = self._run
        if run is not None:
            elapsed = self.clock() - run.started
            if self._printed or elapsed >= self.interval:
                self._write(f"{self._name}: {run.done:,}/{run.total or 0:,} in {duration(elapsed)}")
        self._parts, self._run, self._printed = {}, None, False

    @contextmanager
    def parts(self, name: str) -> Iterator[None]:
        self._end_run()
        self._name = name
        try:
            yield
        finally:
            self._end_run()
            self._name = self.title

    def start(self, part: str, total: int) -> None:
        now = self.clock()
        if part in self._parts:  # a part starts once per run: this is the next run
            self._end_run()
        if self._run is None:
            self._run = _Meter(0, now)
            self._last = now
        self._parts[part] = _Meter(max(total, 0), now)
        self._run.total = (self._run.total or 0) + max(total, 0)

    def advance(self, part: str, n: int = 1) -> None:
        meter = self._parts.get(part)
        if meter is None or self._run is None or not n:
            return
        now = self.clock()
        meter.add(n, now)
        self._run.add(n, now)
        if self._due():
            self._write(self._run_line(self._run))

    def _run_line(self, run: _Meter) -> str:
        """The run's meter, then its unfinished parts (when it has several): the first
        :data:`PARTS_SHOWN` by name, the rest counted, so a probe run's dozens of
        (judge, kind) parts keep the line readable. With several parts the time left
        is the slowest part's (:func:`parts_left`)."""
        now = self.clock()
        if sum(1 for m in self._parts.values() if m.total) < 2:
            return f"{self._name}: {run.line(now)}"
        line = f"{self._name}: {run.line(now, parts=list(self._parts.values()))}"
        left = [(p, m) for p, m in self._parts.items() if m.total and m.done < m.total]
        shown = ", ".join(f"{p} {m.done:,}/{m.total or 0:,}" for p, m in left[:PARTS_SHOWN])
        more = len(left) - PARTS_SHOWN
        if more > 0:
            shown += f", {more:,} more"
        return line + f" ({shown})" if shown else line

    def batch(self, key: str, text: str, completed: int, total: int) -> None:
        """A line when a batch's status changes, else at most one per interval."""
        if self._batches.get(key) == text and not self._due():
            return
        self._batches[key] = text
        self._write(f"{text}: {completed:,}/{total:,} answered")


def _bars(*, transient: bool) -> Any:
    """A Rich progress display on stderr: name, bar, done of total, time spent and
    left; every text inert (:func:`tiap.cli.output.console`)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    err = console(stderr=True)
    return Progress(
        TextColumn("{task.description}", style="bold", justify="left", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=transient,
        disable=transient and not err.is_terminal,
    )


class RichProgress(Reporter):
    """Progress bars on stderr: one per step while it runs (then gone), and one per
    part (judge) with work to do and per provider batch, kept until the display
    closes. Use as a context manager."""

    def __init__(self) -> None:
        self._progress: Any = None
        #: the bars of the parts and batches, by name or key
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_run()

    def _end_run(self) -> None:
        """Stop the run's bars (they stay on the screen as they ended)."""
        if self._progress is not None:
            self._progress.stop()
        self._progress, self._tasks = None, {}

    def _run_bars(self) -> Any:
        """The bars of parts and batches, shown from the first one on."""
        if self._progress is None:
            self._progress = _bars(transient=False)
            self._progress.start()
        return self._progress

    def message(self, text: str) -> None:
        echo(text)

    @contextmanager
    def step(self, name: str, total: int | None) -> Iterator[Advance]:
        with _bars(transient=True) as progress:
            task = progress.add_task(inert(name), total=total)
            yield lambda n: progress.advance(task, n)

    @contextmanager
    def parts(self, name: str) -> Iterator[None]:
        self._end_run()
        try:
            yield
        finally:
            self._end_run()

    def start(self, part: str, total: int) -> None:
        """A bar for a part with ``total`` units to do (none for nothing to do)."""
        if part in self._tasks:  # a part starts once per run: this is the next run
            self._end_run()
        if total > 0:
            self._tasks[part] = self._run_bars().add_task(inert(part), total=total)

    def advance(self, part: str, n: int = 1) -> None:
        task = self._tasks.get(part)
        if self._progress is not None and n and task is not None:
            self._progress.advance(task, n)

    def batch(self, key: str, text: str, completed: int, total: int) -> None:
        """A provider batch's status and its answered lines (shown while it runs)."""
        bars = self._run_bars()
        task = self._tasks.get(key)
        if task is None:
            self._tasks[key] = bars.add_task(inert(text), completed=completed, total=max(total, 1))
        else:
            bars.update(task, description=inert(text), completed=completed, total=max(total, 1))


#: the line shown while a judge route loads its library (litellm: seconds, more under load)
ROUTE_LOADING = "loading the {route} route…"


def route_announcer(quiet: bool) -> Callable[[str], None] | None:
    """The judges' ``on_route_load`` hook (:data:`tiap.judge.routes.OnRouteLoad`):
    a line on stderr as soon as a route starts loading its library, so the wait
    before the first judgment is not silent; none when ``quiet``."""
    if quiet:
        return None

    def announce(route: str) -> None:
        echo(ROUTE_LOADING.format(route=route), err=True)

    return announce


@contextmanager
def progress_reporter(quiet: bool) -> Iterator[Reporter]:
    """The reporter a command hands the library: bars on a terminal, plain lines
    elsewhere, nothing when ``quiet``. Closed (bars stopped, a run's closing line
    printed) when the block ends."""
    if quiet:
        yield NoReporter()
        return
    display = RichProgress() if sys.stderr.isatty() else PlainProgress()
    with display:
        yield display
