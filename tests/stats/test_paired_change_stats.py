"""The exact tests, Newcombe's paired interval, the chance-corrected coefficients
and the EWMA chart against their reference implementations and hand-worked values."""

from __future__ import annotations

import itertools
import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.contingency_tables import mcnemar

from tiap.limits import LimitError
from tiap.stats import (
    cohen_kappa,
    ewma_chart,
    krippendorff_alpha,
    mcnemar_exact,
    paired_difference,
    sign_test,
)


@pytest.mark.parametrize(
    ("b", "c"),
    [(0, 0), (1, 0), (1, 6), (6, 1), (5, 5), (3, 9), (0, 12), (40, 61), (300, 251)],
)
def test_mcnemar_exact_matches_statsmodels(b: int, c: int) -> None:
    expected = mcnemar([[7, b], [c, 11]], exact=True).pvalue
    got = mcnemar_exact(b, c)
    assert got.n == b + c
    assert got.p_value == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_mcnemar_exact_by_hand_and_above_the_integer_range() -> None:
    # b = 1, c = 6: P(X <= 1) = (1 + 7) / 128, two-sided 16 / 128
    assert mcnemar_exact(1, 6).p_value == 0.125
    assert mcnemar_exact(0, 0).p_value == 1.0
    # above the integer sum's range the scipy tail agrees with statsmodels
    big = mcnemar([[0, 2600], [2900, 0]], exact=True).pvalue
    assert mcnemar_exact(2600, 2900).p_value == pytest.approx(big, rel=1e-9)


def test_sign_test_is_the_binomial_test() -> None:
    from scipy.stats import binomtest

    for plus, minus in [(2, 9), (9, 2), (4, 4), (0, 7)]:
        expected = binomtest(plus, plus + minus, 0.5).pvalue if plus + minus else 1.0
        assert sign_test(plus, minus).p_value == pytest.approx(expected, rel=1e-12)


def test_exact_tests_refuse_negative_counts() -> None:
    with pytest.raises(LimitError):
        mcnemar_exact(-1, 3)


@pytest.mark.parametrize(
    ("counts", "interval"),
    [
        # Newcombe (1998), table II: p1 - p2 and its interval; here second - first
        ((36, 12, 2, 0), (-0.3404, -0.0569)),
        ((18, 12, 2, 18), (-0.3290, -0.0562)),
        ((53, 0, 0, 1), (-0.0729, 0.0729)),
    ],
)
def test_paired_difference_matches_newcombe(
    counts: tuple[int, int, int, int], interval: tuple[float, float]
) -> None:
    d = paired_difference(*counts)
    _, first, second, _ = counts
    assert d.difference == pytest.approx((second - first) / sum(counts))
    assert d.lower == pytest.approx(interval[0], abs=1e-4)
    assert d.upper == pytest.approx(interval[1], abs=1e-4)
    assert d.lower <= d.difference <= d.upper


def test_paired_difference_needs_an_item() -> None:
    with pytest.raises(LimitError):
        paired_difference(0, 0, 0, 0)


def test_cohen_kappa_matches_sklearn() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        a = rng.integers(0, 3, 60)
        b = np.where(rng.random(60) < 0.6, a, rng.integers(0, 3, 60))
        expected = cohen_kappa_score(a, b, labels=[0, 1, 2])
        assert cohen_kappa(a.tolist(), b.tolist(), 3) == pytest.approx(expected, abs=1e-12)
    # missing labels are left out pairwise; one category only is undefined
    assert cohen_kappa([0, 1, -1, 1], [0, 1, 1, -1], 2) == pytest.approx(1.0)
    assert cohen_kappa([1, 1, 1], [1, 1, 1], 3) is None
    assert cohen_kappa([-1], [0], 2) is None


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_krippendorff_alpha_matches_the_package(level: str) -> None:
    rng = np.random.default_rng(11)
    for raters, items in itertools.product((2, 3, 5), (8, 40)):
        truth = rng.integers(0, 3, items)
        data = np.where(rng.random((raters, items)) < 0.7, truth, rng.integers(0, 3, items))
        data = np.where(rng.random((raters, items)) < 0.1, -1, data)
        expected = krippendorff.alpha(
            reliability_data=np.where(data < 0, np.nan, data).astype(float),
            level_of_measurement=level,
            value_domain=[0, 1, 2],
        )
        got = krippendorff_alpha(data, 3, level)  # type: ignore[arg-type]
        assert got is not None
        assert got == pytest.approx(expected, abs=1e-10)


def test_krippendorff_alpha_undefined_cases() -> None:
    assert krippendorff_alpha([[0, 0], [0, 0]], 2) is None  # one category: no expected
    assert krippendorff_alpha([[0, -1], [-1, 1]], 2) is None  # nothing pairable
    assert krippendorff_alpha([[0, 1], [0, 1]], 2) == pytest.approx(1.0)


def test_ewma_by_hand() -> None:
    # p0 = 0.1, n = 100 each, lambda 0.3, L 3: sigma^2 = 0.1 * 0.9 / 100 = 0.0009
    # t1: z = 0.3*0.1 + 0.7*0.1 = 0.1;      var = 0.09*0.0009 = 0.000081
    #     UCL = 0.1 + 3*sqrt(0.000081) = 0.1 + 0.027 = 0.127            no alarm
    # t2: z = 0.3*0.2 + 0.7*0.1 = 0.13;     var = 0.49*0.000081 + 0.000081 = 0.00012069
    #     UCL = 0.1 + 3*0.0109859 = 0.1329578                          no alarm (0.13)
    # t3: z = 0.3*0.3 + 0.7*0.13 = 0.181;   var = 0.49*0.00012069 + 0.000081 = 0.0001401381
    #     UCL = 0.1 + 3*0.0118380 = 0.1355140                          alarm
    chart = ewma_chart([0.1, 0.2, 0.3], [100, 100, 100], 0.1)
    assert [round(p.ewma, 6) for p in chart] == [0.1, 0.13, 0.181]
    assert [round(p.upper, 6) for p in chart] == [0.127, 0.132958, 0.135514]
    assert [p.alarm for p in chart] == [False, False, True]
    # the recursion is the textbook variance for a constant n
    t = 3
    closed = 0.0009 * 0.3 / 1.7 * (1 - 0.7 ** (2 * t))
    assert chart[-1].upper == pytest.approx(0.1 + 3 * math.sqrt(closed))


def test_ewma_with_a_zero_target_alarms_on_any_change() -> None:
    chart = ewma_chart([0.0, 0.0, 0.02], [50, 50, 50], 0.0)
    assert [p.alarm for p in chart] == [False, False, True]
    two_sided = ewma_chart([0.3, 0.0, 0.0, 0.0], [100] * 4, 0.3, one_sided=False)
    assert two_sided[-1].alarm
    assert not two_sided[0].alarm


def test_ewma_checks_its_input() -> None:
    with pytest.raises(LimitError):
        ewma_chart([0.1], [10, 10], 0.1)
    with pytest.raises(LimitError):
        ewma_chart([1.5], [10], 0.1)
