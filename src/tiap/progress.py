"""How long work tells anyone how far it got: one protocol, and a reporter that says nothing.

Library code (building and importing trace bundles, judging, bootstraps) reports
its progress to a :class:`Reporter` and never draws anything itself. The command
line shows what it reports (:mod:`tiap.cli.progress_display`): a bar on a
terminal, a plain line every few seconds elsewhere, nothing with ``--quiet``.
Python callers pass a reporter of their own, or get :class:`NoReporter` (the
default everywhere): silence.

Work comes in two shapes:

- a **step** on its own, one after another (read a file, rank 1,971 queries,
  draw 2,000 bootstrap resamples)::

      with reporter.step("bootstrap: 2,000 resamples", 2000) as advance:
          for _ in range(2000):
              ...
              advance(1)

  A display shows the step alone, named by itself, while it runs.
- **parts** that run side by side (the judges of a panel)::

      with reporter.parts("judging"):
          reporter.start("gpt-4o", 120)
          reporter.start("claude", 120)
          ...
          reporter.advance("claude", 1)

  A display shows the parts together, as one run named by ``parts``, until the
  block ends. Parts started outside such a block belong to the display's own
  run, which a part starting again ends (the next run begins).

Besides: :meth:`Reporter.message`, one line saying what a step made (a summary a
person reads), and :meth:`Reporter.batch`, the status of a provider batch while
it runs. Names and texts may quote data (run, judge and file names): displays
show them inert (:func:`tiap.text.inert`). This module is a leaf: every package
of tiap may import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

__all__ = ["Advance", "NoReporter", "Reporter"]

#: what a step yields: ``advance(n)``, ``n`` more units done
Advance = Callable[[int], None]


class Reporter(Protocol):
    """Progress of long work: steps, parts side by side, summaries, batches."""

    def step(self, name: str, total: int | None) -> AbstractContextManager[Advance]:
        """A step of ``total`` units (``None``: unknown), shown while the ``with``
        block runs; yields ``advance(n)``."""
        ...

    def parts(self, name: str) -> AbstractContextManager[None]:
        """The parts started in the ``with`` block are one run, named ``name``."""
        ...

    def start(self, part: str, total: int) -> None:
        """A part of ``total`` units begins, beside the others of its run (only parts
        with work to do are started)."""
        ...

    def advance(self, part: str, n: int = 1) -> None:
        """``n`` more units of a started part are done (a part not started: ignored)."""
        ...

    def message(self, text: str) -> None:
        """One line saying what a step made (e.g. ``store raw: 5,882 memories``)."""
        ...

    def batch(self, key: str, text: str, completed: int, total: int) -> None:
        """A provider batch ``key``: its status ``text`` and ``completed`` of
        ``total`` lines answered, each time it is polled."""
        ...


class NoReporter(Reporter):
    """The default reporter: shows nothing, keeps nothing."""

    @contextmanager
    def step(self, name: str, total: int | None) -> Iterator[Advance]:
        yield _nothing

    @contextmanager
    def parts(self, name: str) -> Iterator[None]:
        yield

    def start(self, part: str, total: int) -> None:
        pass

    def advance(self, part: str, n: int = 1) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def batch(self, key: str, text: str, completed: int, total: int) -> None:
        pass


def _nothing(n: int) -> None:
    pass
