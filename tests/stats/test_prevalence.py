"""The Rogan-Gladen correction, worked by hand, and where it is undefined."""

from __future__ import annotations

import math

import pytest

from tiap.limits import LimitError
from tiap.stats import rogan_gladen


def test_rogan_gladen_by_hand() -> None:
    # A rater calls 300 of 1000 cases positive: q = 0.3. Against the reference:
    # 45 of 50 positives called positive (Se 0.9), 120 of 150 negatives called
    # negative (Sp 0.8). J = 0.9 + 0.8 - 1 = 0.7.
    # theta = (0.3 + 0.8 - 1) / 0.7 = 0.1 / 0.7 = 0.142857
    # var = [0.3*0.7/1000 + theta^2 * 0.9*0.1/50 + (1-theta)^2 * 0.8*0.2/150] / 0.49
    #     = [0.00021 + 0.0204082*0.0018 + 0.7346939*0.0010667] / 0.49
    #     = [0.00021 + 0.0000367 + 0.0007837] / 0.49 = 0.0010304 / 0.49 = 0.0021029
    # sd 0.045857, half = 1.959964 * 0.045857 = 0.089878
    # CI (0.052979, 0.232735)
    rg = rogan_gladen(300, 1000, 45, 50, 120, 150)
    assert rg.value == pytest.approx(0.142857, abs=1e-6)
    assert rg.ci == pytest.approx((0.052979, 0.232735), abs=1e-5)
    assert rg.youden == pytest.approx(0.7)
    assert rg.reason is None
    assert (rg.apparent, rg.sensitivity, rg.specificity) == pytest.approx((0.3, 0.9, 0.8))


def test_the_estimate_and_its_bounds_are_clipped_to_0_1() -> None:
    # q 0.1 below the false-positive rate 1 - Sp = 0.2: theta = (0.1 - 0.2)/0.7 < 0
    rg = rogan_gladen(100, 1000, 45, 50, 120, 150)
    assert rg.value == 0.0
    assert rg.ci is not None
    assert rg.ci[0] == 0.0
    assert 0.0 <= rg.ci[1] < 0.1


def test_no_information_is_undefined_with_its_reason() -> None:
    # Se 0.5, Sp 0.5: J = 0
    rg = rogan_gladen(300, 1000, 25, 50, 75, 150)
    assert rg.value is None
    assert rg.ci is None
    assert rg.reason is not None
    assert "<= 0" in rg.reason
    # worse than chance: J < 0
    assert rogan_gladen(300, 1000, 10, 50, 30, 150).value is None
    no_pos = rogan_gladen(300, 1000, 0, 0, 120, 150)
    assert no_pos.value is None
    assert "sensitivity" in (no_pos.reason or "")
    no_neg = rogan_gladen(300, 1000, 45, 50, 0, 0)
    assert "specificity" in (no_neg.reason or "")
    assert "no case" in (rogan_gladen(0, 0, 45, 50, 120, 150).reason or "")


def test_counts_are_checked() -> None:
    with pytest.raises(LimitError, match="called"):
        rogan_gladen(11, 10, 1, 2, 1, 2)
    with pytest.raises(LimitError, match="true_positives"):
        rogan_gladen(1, 10, 3, 2, 1, 2)
    with pytest.raises(LimitError):
        rogan_gladen(1, -1, 1, 2, 1, 2)
    assert math.isfinite(rogan_gladen(1, 10, 2, 2, 1, 2).value or 0.0)
