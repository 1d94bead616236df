"""Process tuning for tiap's long-running work, applied only where it is asked for.

Library code leaves the interpreter as it found it: it sets no environment
variable, no garbage-collector setting and no library global for good. The
tunings that make the ``tiap`` command fast live here and take effect only
inside :func:`tuned`, which the command's entry point enters (the benchmarks
enter it too, to measure what the command does)::

    from tiap.runtime import tuned

    with tuned():
        bundle = read_bundle("bundles/locomo")   # tuned: the collector pauses

Library functions mark the places where a tuning helps; outside :func:`tuned`
these marks do nothing:

- :func:`bulk_read` around reading many long-lived, acyclic records (a trace
  bundle): the cyclic collector pauses while they are read (its collections
  would walk them again and again, about half of the reading time), and the new
  records then go straight to its oldest generation, so the young collections
  that follow do not walk them either (skipped when something is frozen);
- :func:`calls_in_flight` while model calls run: the collector's first
  threshold is raised to :data:`CALLS_GC_THRESHOLD` (each litellm call allocates
  thousands of container objects, many alive for the whole call, and with a
  hundred calls in flight the default threshold makes the collector walk the
  same young objects again and again: about a tenth of a call's CPU);
- :func:`long_lived` after creating objects that live as long as the process
  (litellm's import leaves some 400,000; a terminal app's session): they are
  frozen out of the collector's full passes (about 1 ms of CPU per call with
  150 calls in flight, and pauses between key presses).

When the outermost :func:`tuned` exits, the collector is as it was at entry:
enabled or not, the same thresholds, and whatever :func:`tuned` froze unfrozen.
If the process had frozen objects of its own at entry, nothing is frozen or
unfrozen (they stay the caller's).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["CALLS_GC_THRESHOLD", "active", "bulk_read", "calls_in_flight", "long_lived", "tuned"]

#: the cyclic GC's first threshold while model calls are in flight (Python's default: 700).
CALLS_GC_THRESHOLD = 20_000


@dataclass
class _Tuning:
    depth: int = 0
    enabled: bool = True
    threshold: tuple[int, ...] = ()
    #: nothing was frozen at entry, so :func:`long_lived` may freeze (and exit unfreezes).
    may_freeze: bool = False
    froze: set[str] = field(default_factory=set)
    calls: int = 0
    calls_threshold: tuple[int, ...] = ()


_lock = threading.RLock()
_state = _Tuning()


@contextmanager
def tuned() -> Iterator[None]:
    """Apply tiap's process tuning inside the block (see the module doc); nests."""
    with _lock:
        if _state.depth == 0:
            _state.enabled = gc.isenabled()
            _state.threshold = gc.get_threshold()
            _state.may_freeze = gc.get_freeze_count() == 0
            _state.froze = set()
        _state.depth += 1
    try:
        yield
    finally:
        with _lock:
            _state.depth -= 1
            if _state.depth == 0:
                if _state.froze:
                    gc.unfreeze()
                _state.froze = set()
                gc.set_threshold(*_state.threshold)
                if _state.enabled:
                    gc.enable()
                else:
                    gc.disable()


def active() -> bool:
    """True inside :func:`tuned`."""
    return _state.depth > 0


@contextmanager
def bulk_read() -> Iterator[None]:
    """Around reading many long-lived, acyclic records; tuned only (see the module doc)."""
    if not active():
        yield
        return
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()
    with _lock:
        if active() and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()


@contextmanager
def calls_in_flight() -> Iterator[None]:
    """While model calls run; tuned only (see the module doc). Nests, across threads."""
    with _lock:
        applied = active()
        if applied:
            if _state.calls == 0:
                before = gc.get_threshold()
                _state.calls_threshold = before
                gc.set_threshold(max(before[0], CALLS_GC_THRESHOLD), *before[1:])
            _state.calls += 1
    try:
        yield
    finally:
        if applied:
            with _lock:
                _state.calls -= 1
                if _state.calls == 0:
                    gc.set_threshold(*_state.calls_threshold)


def long_lived(what: str, *, collect: bool = False) -> None:
    """Objects alive now live as long as the process (``what`` names them, e.g.
    ``"litellm"``): tuned only, once per :func:`tuned` block and name, they are
    frozen out of the collector's passes until the block ends (after a full
    collection first with ``collect``)."""
    with _lock:
        if not active() or not _state.may_freeze or what in _state.froze:
            return
        if collect:
            gc.collect()
        gc.freeze()
        _state.froze.add(what)
