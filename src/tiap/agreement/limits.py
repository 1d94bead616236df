"""The ranges of the agreement report's settings, checked where they enter (the
command line and :func:`tiap.agreement.compute_report` alike). Each check returns
the value or raises a one-line :class:`~tiap.errors.TiapError` naming the setting
as the caller calls it (``--quorum`` or ``quorum``).

The generic checks (resamples, seed) are :mod:`tiap.limits`'s, shared by every
command; this module keeps the names the agreement code and its users import.
"""

from __future__ import annotations

from tiap.cases.events import check_kappa_threshold, share_threshold_problem
from tiap.errors import TiapError
from tiap.limits import (
    MAX_RESAMPLES,
    SEED_LIMIT,
    LimitError,
    check_cases,
    check_int,
    check_seed,
)
from tiap.limits import check_resamples as _check_resamples

#: the most voters a quorum can ask for before the voters are known.
MAX_QUORUM = 10_000

__all__ = [
    "MAX_QUORUM",
    "MAX_RESAMPLES",
    "SEED_LIMIT",
    "check_cases",
    "check_kappa_threshold",
    "check_quorum",
    "check_resamples",
    "check_seed",
    "check_share_threshold",
]


def check_resamples(name: str, value: int) -> int:
    """0 (no intervals) to :data:`MAX_RESAMPLES`."""
    return _check_resamples(name, value, minimum=0, maximum=MAX_RESAMPLES)


def check_quorum(name: str, value: int, n_voters: int | None = None) -> int:
    """At least 1 and, when the voters are known, at most their number."""
    n = check_int(name, value, minimum=1, maximum=MAX_QUORUM)
    if n_voters is not None and n > n_voters:
        raise LimitError(
            name, f"{n} exceeds the {n_voters} voter(s): no case could have a majority"
        )
    return n


def check_share_threshold(name: str, value: float) -> float:
    """A threshold on a share: a finite number in [0, 1] (one-line error otherwise)."""
    problem = share_threshold_problem(value)
    if problem is not None:
        raise TiapError(f"{name} {problem}")
    return float(value)
