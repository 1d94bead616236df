"""The ranges of the agreement report's settings, checked where they enter (the
command line and :func:`tiap.agreement.compute_report` alike). Each check returns
the value or raises a one-line :class:`~tiap.errors.TiapError` naming the setting
as the caller calls it (``--quorum`` or ``quorum``)."""

from __future__ import annotations

from tiap.cases.events import check_kappa_threshold
from tiap.errors import TiapError

#: the most bootstrap resamples a report draws (1,000 is the default).
MAX_RESAMPLES = 1_000_000
#: seeds are non-negative integers below this.
SEED_LIMIT = 2**63

__all__ = [
    "MAX_RESAMPLES",
    "SEED_LIMIT",
    "check_kappa_threshold",
    "check_quorum",
    "check_resamples",
    "check_seed",
]


def _integer(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TiapError(f"{name} must be an integer (got {value!r})")
    return value


def check_resamples(name: str, value: int) -> int:
    """0 (no intervals) to :data:`MAX_RESAMPLES`."""
    n = _integer(name, value)
    if not 0 <= n <= MAX_RESAMPLES:
        raise TiapError(f"{name} must be between 0 (no intervals) and {MAX_RESAMPLES:,} (got {n})")
    return n


def check_seed(name: str, value: int) -> int:
    """A non-negative integer below 2**63."""
    n = _integer(name, value)
    if not 0 <= n < SEED_LIMIT:
        raise TiapError(f"{name} must be a non-negative integer below 2**63 (got {n})")
    return n


def check_quorum(name: str, value: int, n_voters: int | None = None) -> int:
    """At least 1 and, when the voters are known, at most their number."""
    n = _integer(name, value)
    if n < 1:
        raise TiapError(f"{name} must be at least 1 (got {n})")
    if n_voters is not None and n > n_voters:
        raise TiapError(
            f"{name} {n} exceeds the {n_voters} voter(s): no case could have a majority"
        )
    return n
