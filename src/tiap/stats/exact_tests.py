"""Exact tests on paired changes: McNemar's test and the sign test.

Both ask one question of ``b`` changes one way and ``c`` the other way among paired
observations: are the two directions equally likely? Under that null hypothesis
``b`` is ``Binomial(b + c, 1/2)``, and the exact two-sided p-value is twice the
smaller tail, at most 1::

    p = min(1, 2 * P(X <= min(b, c))),  X ~ Binomial(b + c, 1/2)
      = min(1, 2 * sum_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c))

computed in integers (exact) and rounded once to a float up to
:data:`EXACT_UP_TO` changes; above that from scipy's binomial distribution function
(the regularized incomplete beta, accurate to a float's precision). No change at all
(``b + c = 0``) gives ``p = 1``. This is ``statsmodels.stats.contingency_tables.
mcnemar(table, exact=True)`` for the 2x2 table whose off-diagonal cells are ``b``
and ``c`` (the tests check it against it). Worked by hand: ``b = 1, c = 6``:
``P(X <= 1) = (1 + 7) / 128``, so ``p = 16 / 128 = 0.125``.

- **McNemar's exact test** (McNemar 1947, Psychometrika 12:153-157): paired binary
  labels, ``b`` = positive then negative, ``c`` = negative then positive.
- **Sign test**: signed changes on an ordered scale (toward or away from a label);
  ties (no change) are left out, as McNemar leaves out the concordant pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tiap.limits import check_int

__all__ = ["ExactTest", "binomial_two_sided", "mcnemar_exact", "sign_test"]

#: the most changes an exact test takes.
MAX_CHANGES = 100_000_000
#: up to this many changes the tail is summed in integers (exactly).
EXACT_UP_TO = 5_000


@dataclass(frozen=True)
class ExactTest:
    """An exact test of ``b`` changes one way against ``c`` the other way."""

    b: int
    c: int
    p_value: float

    @property
    def n(self) -> int:
        """The changes the test rests on (ties and concordant pairs left out)."""
        return self.b + self.c


def binomial_two_sided(b: int, c: int) -> float:
    """The exact two-sided p-value of ``b`` against ``c`` under ``Binomial(b+c, 1/2)``
    (see the module docstring)."""
    b = check_int("b", b, minimum=0, maximum=MAX_CHANGES)
    c = check_int("c", c, minimum=0, maximum=MAX_CHANGES)
    n = b + c
    if n == 0:
        return 1.0
    if n > EXACT_UP_TO:
        from scipy.stats import binom  # loaded on first use

        return min(1.0, 2.0 * float(binom.cdf(min(b, c), n, 0.5)))
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    # 2 * tail / 2**n, as one exact fraction rounded once
    return min(1.0, tail / (1 << (n - 1)))


def mcnemar_exact(b: int, c: int) -> ExactTest:
    """McNemar's exact test: ``b`` pairs positive then negative, ``c`` negative then
    positive."""
    return ExactTest(b, c, binomial_two_sided(b, c))


def sign_test(plus: int, minus: int) -> ExactTest:
    """The two-sided sign test of ``plus`` changes one way against ``minus`` the other."""
    return ExactTest(plus, minus, binomial_two_sided(plus, minus))
