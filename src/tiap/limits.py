"""The ranges of every number a user gives tiap, checked where it enters.

Options, settings read from files and parameters of the Python API go through the
same checks, so ``--k 0``, ``k = 0`` in ``bundle.toml`` and ``extract_cases(...,
k=0)`` fail alike: a one-line :class:`LimitError` (a :class:`~tiap.errors.TiapError`)
naming the setting as the caller calls it (``--k``, ``k``) and the value. The
command line prints it as one line and exits 2.

The maxima are named here (and listed in the README, "Validation"): values above
them would not fit the workspace's integers, allocate more memory than any machine
has, or run for days, and no audit needs them.

This module is a leaf: it imports nothing from tiap but :mod:`tiap.errors`.
"""

from __future__ import annotations

import math
import operator
from numbers import Real

from tiap.errors import TiapError

#: the deepest cut-off (``--k``, ``--ks``, ``k`` in ``bundle.toml``, measures like
#: ``ndcg@K``) and the deepest ranking a build keeps.
MAX_K = 100_000
#: the most bootstrap resamples of an agreement report (0: no intervals).
MAX_RESAMPLES = 1_000_000
#: the most bootstrap resamples of a rescore (each resample is a matrix product over
#: every run's per-query values, once per shared-subset size, so fewer run in a
#: reasonable time than for an agreement report; memory is bounded either way).
MAX_RESCORE_RESAMPLES = 100_000
#: seeds are non-negative integers below this (numpy's and SQLite's 64-bit range).
SEED_LIMIT = 2**63
#: the most cases a count option asks for (``--n``, ``--overlap``, ``--per-dataset``,
#: ``--negatives``).
MAX_CASES = 1_000_000
#: the largest budget in US dollars (``--max-cost``).
MAX_COST_USD = 1_000_000.0
#: the most calls of one judge in flight at once (a panel's ``concurrency``).
MAX_CONCURRENCY = 1024
#: the most attempts of one call (a panel's ``max_attempts``).
MAX_ATTEMPTS = 50
#: the longest reply a panel keeps (``max_reply_bytes``: 16 MiB).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: the largest ``max_tokens`` of a panel.
MAX_TOKENS = 1_000_000
#: the longest ``timeout_s``, backoff and ``retry_after_max_s`` of a panel (one day).
MAX_SECONDS = 86_400.0
#: the largest character cap of a text (``--max-chars``; 0 means no cap).
MAX_TEXT_CHARS = 100_000_000
#: the most voters a quorum can ask for before the voters are known.
MAX_QUORUM = 10_000
#: the most raters a sample-size plan is made for (``tiap agreement plan --raters``).
MAX_RATERS = 1_000

#: integers with more bits than this are not printed in full in messages.
_SHOWN_BITS = 200

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_CASES",
    "MAX_CONCURRENCY",
    "MAX_COST_USD",
    "MAX_K",
    "MAX_QUORUM",
    "MAX_RATERS",
    "MAX_REPLY_BYTES",
    "MAX_RESAMPLES",
    "MAX_RESCORE_RESAMPLES",
    "MAX_SECONDS",
    "MAX_TEXT_CHARS",
    "MAX_TOKENS",
    "SEED_LIMIT",
    "LimitError",
    "check_cases",
    "check_cost",
    "check_float",
    "check_int",
    "check_interval_width",
    "check_k",
    "check_kappa",
    "check_prevalence",
    "check_quorum",
    "check_raters",
    "check_resamples",
    "check_seed",
    "check_share_threshold",
    "show_number",
]


class LimitError(TiapError):
    """A number out of its range: ``name`` is the setting, ``problem`` the rest of
    the sentence (``must be at least 1 (got 0)``), so a pydantic validator can raise
    ``ValueError(problem)`` and let the field's name lead the message."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"{name} {problem}" if name else problem)


def show_number(value: object) -> str:
    """``value`` as a message shows it (a huge integer by its size, not its digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _SHOWN_BITS:
        return f"an integer of {value.bit_length()} bits"
    return repr(value) if isinstance(value, str) else str(value)


def _integer(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise LimitError(name, f"must be an integer (got {value!r})")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise LimitError(name, f"must be an integer (got {show_number(value)})") from None


def check_int(name: str, value: object, *, minimum: int, maximum: int) -> int:
    """An integer in ``[minimum, maximum]`` (numpy integers too; not a bool)."""
    n = _integer(name, value)
    if n < minimum:
        if minimum == 0:
            raise LimitError(name, f"must not be negative (got {show_number(n)})")
        raise LimitError(name, f"must be at least {minimum:,} (got {show_number(n)})")
    if n > maximum:
        raise LimitError(name, f"must be at most {maximum:,} (got {show_number(n)})")
    return n


def check_float(name: str, value: object, *, minimum: float, maximum: float) -> float:
    """A finite number in ``[minimum, maximum]`` (an int is fine; NaN and infinities are not)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise LimitError(name, f"must be a number (got {show_number(value)})")
    try:
        x = float(value)
    except OverflowError:  # an integer beyond a float's range
        x = -math.inf if operator.lt(value, 0) else math.inf
    if not math.isfinite(x):
        raise LimitError(name, f"must be a finite number (got {x})")
    if not minimum <= x <= maximum:
        if x < minimum and minimum == 0:
            raise LimitError(name, f"must not be negative (got {x:g})")
        raise LimitError(name, f"must lie between {minimum:g} and {maximum:g} (got {x:g})")
    return x


def check_k(name: str, value: object) -> int:
    """A cut-off: 1 to :data:`MAX_K`."""
    return check_int(name, value, minimum=1, maximum=MAX_K)


def check_seed(name: str, value: object) -> int:
    """A seed: a non-negative integer below 2**63."""
    n = _integer(name, value)
    if not 0 <= n < SEED_LIMIT:
        raise LimitError(name, f"must be a non-negative integer below 2**63 (got {show_number(n)})")
    return n


def check_resamples(
    name: str, value: object, *, minimum: int = 0, maximum: int = MAX_RESAMPLES
) -> int:
    """Bootstrap resamples: ``minimum`` (0: no intervals) to ``maximum``."""
    n = _integer(name, value)
    if minimum == 0 and not 0 <= n <= maximum:
        raise LimitError(
            name, f"must be between 0 (no intervals) and {maximum:,} (got {show_number(n)})"
        )
    return check_int(name, n, minimum=minimum, maximum=maximum)


def check_cases(name: str, value: object, *, minimum: int = 1) -> int:
    """A number of cases: ``minimum`` (1, or 0 where none means something) to
    :data:`MAX_CASES`."""
    return check_int(name, value, minimum=minimum, maximum=MAX_CASES)


def check_cost(name: str, value: object) -> float:
    """A budget in US dollars: a finite number from 0 to :data:`MAX_COST_USD`."""
    return check_float(name, value, minimum=0.0, maximum=MAX_COST_USD)


def check_quorum(name: str, value: object, n_voters: int | None = None) -> int:
    """A quorum of voters: at least 1 and, when the voters are known, at most their number."""
    n = check_int(name, value, minimum=1, maximum=MAX_QUORUM)
    if n_voters is not None and n > n_voters:
        raise LimitError(
            name, f"{n} exceeds the {n_voters} voter(s): no case could have a majority"
        )
    return n


def check_share_threshold(name: str, value: object) -> float:
    """A threshold on a share: a finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LimitError(name, f"must be a number in [0, 1] (got {value!r})")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise LimitError(name, f"must be a finite number in [0, 1] (got {value!r})")
    return float(value)


def check_kappa(name: str, value: object) -> float:
    """A kappa (an estimate or a threshold given by hand): a finite number in [-1, 1]."""
    return check_float(name, value, minimum=-1.0, maximum=1.0)


def check_prevalence(name: str, value: object) -> float:
    """A prevalence: a finite share strictly between 0 and 1 (at 0 or 1 no kappa is
    defined)."""
    p = check_float(name, value, minimum=0.0, maximum=1.0)
    if p in (0.0, 1.0):
        raise LimitError(name, f"must lie strictly between 0 and 1 (got {p:g})")
    return p


def check_interval_width(name: str, value: object) -> float:
    """The full width of a confidence interval of a kappa: a finite number in (0, 2]."""
    w = check_float(name, value, minimum=0.0, maximum=2.0)
    if w == 0.0:
        raise LimitError(name, "must be greater than 0 (got 0)")
    return w


def check_raters(name: str, value: object) -> int:
    """A number of raters for a multi-rater kappa: 2 to :data:`MAX_RATERS`."""
    return check_int(name, value, minimum=2, maximum=MAX_RATERS)
