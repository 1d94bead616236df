"""Share intervals honest at small n, checked against statsmodels'
``proportion_confint`` and against cases worked by hand."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from tiap.errors import TiapError
from tiap.stats import (
    RELIABLE_PERCENTILE_N,
    clopper_pearson_interval,
    percentile_reliable,
    share_interval,
    wilson_interval,
)

COUNTS = [(0, 1), (1, 1), (0, 4), (4, 4), (3, 3), (1, 3), (18, 20), (4, 10), (57, 60)]
COUNTS += [(0, 1000), (1000, 1000), (1, 1000), (500, 1000), (113, 115)]


@pytest.mark.parametrize(("k", "n"), COUNTS)
@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_wilson_is_statsmodels_wilson(k: int, n: int, confidence: float) -> None:
    expected = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert wilson_interval(k, n, confidence) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("k", "n"), COUNTS)
@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_clopper_pearson_is_statsmodels_beta(k: int, n: int, confidence: float) -> None:
    expected = proportion_confint(k, n, alpha=1 - confidence, method="beta")
    got = clopper_pearson_interval(k, n, confidence)
    assert got == pytest.approx(tuple(float(x) for x in expected), abs=1e-10)


def test_hand_worked_cases() -> None:
    # 4 of 4 at 95%: z**2 = 3.8415; Wilson centre (1 + 3.8415/8) / (1 + 3.8415/4)
    # = 1.4802 / 1.9604 = 0.7551, half 0.9998 * sqrt(3.8415/64) = 0.2449:
    # [0.5101, 1]. Clopper-Pearson: lower = 0.025 ** (1/4) = 0.3976 (the beta
    # quantile Beta(0.025; 4, 1) is x**4 = 0.025), upper 1.
    assert wilson_interval(4, 4) == pytest.approx((0.5101, 1.0), abs=1e-4)
    assert clopper_pearson_interval(4, 4) == pytest.approx((0.025**0.25, 1.0))
    # 0 of n: Clopper-Pearson upper = 1 - 0.025 ** (1/n); the bound at 0 is exact
    for n in (1, 3, 10):
        lo, hi = clopper_pearson_interval(0, n)
        assert (lo, hi) == (0.0, pytest.approx(1 - 0.025 ** (1 / n)))
        assert wilson_interval(0, n)[0] == 0.0
    # 1 of 2 at 95%: p = 1/2, Wilson is symmetric around 1/2 with half
    # z/(1 + z**2/2) * sqrt(1/8 + z**2/16) = 1.95996/2.92073 * sqrt(0.36509) = 0.40546
    lo, hi = wilson_interval(1, 2)
    assert (lo, hi) == pytest.approx((0.5 - 0.40546, 0.5 + 0.40546), abs=1e-5)


def test_never_degenerate_at_small_n_and_inside_the_unit_interval() -> None:
    for n in range(1, 40):
        for k in range(n + 1):
            for interval in (wilson_interval, clopper_pearson_interval):
                lo, hi = interval(k, n)
                assert 0.0 <= lo <= k / n <= hi <= 1.0
                assert hi - lo > 0.05  # below 40 cases no share is pinned down
    # the width shrinks as n grows at the same share
    widths = [wilson_interval(9 * m, 10 * m) for m in (1, 10, 100)]
    assert [hi - lo for lo, hi in widths] == sorted((hi - lo for lo, hi in widths), reverse=True)


def test_share_interval_dispatches_by_method() -> None:
    assert share_interval(3, 3) == wilson_interval(3, 3)
    assert share_interval(3, 3, "clopper-pearson") == clopper_pearson_interval(3, 3)
    with pytest.raises(TiapError, match="method must be one of wilson, clopper-pearson"):
        share_interval(3, 3, "percentile")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1, 0), "n must be at least 1"),
        ((-1, 5), "successes must not be negative"),
        ((6, 5), "successes must not exceed n (6 > 5)"),
        ((1.5, 5), "successes must be an integer"),
        ((True, 5), "successes must be an integer"),
        ((1, 5, math.nan), "confidence must be a finite number in (0, 1)"),
        ((1, 5, 1.0), "confidence must be a finite number in (0, 1)"),
        ((1, 5, 0.0), "confidence must be a finite number in (0, 1)"),
        ((1, 5, "0.95"), "confidence must be a number"),
    ],
)
def test_inputs_are_checked(args: tuple, message: str) -> None:
    for interval in (wilson_interval, clopper_pearson_interval):
        with pytest.raises(TiapError) as err:
            interval(*args)
        assert message in str(err.value)
        assert "\n" not in str(err.value)


def test_percentile_intervals_are_reliable_from_thirty_cases() -> None:
    assert RELIABLE_PERCENTILE_N == 30
    assert not percentile_reliable(4)
    assert not percentile_reliable(29)
    assert percentile_reliable(30)
