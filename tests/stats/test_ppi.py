"""Prediction-powered inference: against ppi_py (run in a subprocess: importing it
changes the process's warning filters), a hand-worked example, a stratified example
worked by hand, the pooling of strata, and the interval's coverage in simulation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest

from tiap.errors import TiapError
from tiap.stats import (
    StratumSample,
    effective_n,
    pool_strata,
    ppi_mean,
    stratified_ppi,
)

Z = 1.959963984540054  # the normal quantile at 0.975

# ppi_py's intervals for the cases the parent passes on stdin (one process for all)
ORACLE = """
import json, sys
import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
out = []
for case in json.load(sys.stdin):
    y, f, u = (np.array(case[k], dtype=float) for k in ("y", "f", "u"))
    lam = case["lam"]
    lo, hi = ppi_mean_ci(y, f, u, alpha=0.05, lam=lam)
    point = ppi_mean_pointestimate(y, f, u, lam=lam)
    out.append([float(np.ravel(point)[0]), float(np.ravel(lo)[0]), float(np.ravel(hi)[0])])
print(json.dumps(out))
"""


def _oracle_cases() -> list[dict[str, object]]:
    """Unstratified inputs: 0/1 indicators with a judge of known Se/Sp, and real values."""
    rng = np.random.default_rng(20261201)
    cases: list[dict[str, object]] = []
    for n, big_n, prevalence in ((10, 40, 0.6), (115, 2000, 0.3), (60, 500, 0.05), (30, 30, 0.5)):
        truth = rng.random(n + big_n) < prevalence
        called = np.where(truth, rng.random(n + big_n) < 0.9, rng.random(n + big_n) < 0.2)
        y, f, u = truth[:n], called[:n], called[n:]
        for lam in (None, 1.0):
            cases.append({"y": y.tolist(), "f": f.tolist(), "u": u.tolist(), "lam": lam, "n": n})
    real = rng.normal(2.0, 1.0, 300)
    pred = real + rng.normal(0.0, 0.5, 300)
    for lam in (None, 1.0):
        cases.append(
            {"y": real[:50].tolist(), "f": pred[:50].tolist(), "u": pred[50:].tolist(), "lam": lam}
        )
    return cases


def test_unstratified_ppi_equals_ppi_py(require_extra: Callable[[str, str], None]) -> None:
    require_extra("ppi_py", "dev")  # found without importing it here
    cases = _oracle_cases()
    done = subprocess.run(
        [sys.executable, "-c", ORACLE],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    expected = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(expected) == len(cases)
    for case, (point, lo, hi) in zip(cases, expected, strict=True):
        est = ppi_mean(case["y"], case["f"], case["u"], lam=case["lam"])  # type: ignore[arg-type]
        assert est.value == pytest.approx(point, abs=1e-9)
        assert est.ci[0] == pytest.approx(lo, abs=1e-9)
        assert est.ci[1] == pytest.approx(hi, abs=1e-9)
        # one stratum is the unstratified estimate
        one = stratified_ppi(
            [StratumSample.of_values("all", case["y"], case["f"], case["u"])],
            lam=case["lam"],  # type: ignore[arg-type]
        )
        assert one.value == pytest.approx(point, abs=1e-9)
        assert one.ci == pytest.approx((lo, hi), abs=1e-9)


Y = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1]
F = [1, 1, 0, 1, 1, 0, 1, 1, 1, 1]
U = [1] * 26 + [0] * 14


def test_the_worked_example_by_hand() -> None:
    # 10 labelled: mean(y) = 0.6, mean(f) = 0.8; 40 unlabelled: mean(f_u) = 26/40 = 0.65.
    # Plain PPI (lam 1): theta = 0.65 + (0.6 - 0.8) = 0.45.
    #   var0(f_u) = 0.65 * 0.35 = 0.2275, / 40 = 0.0056875
    #   y - f = [0,0,0,0,-1,0,0,0,-1,0]: mean -0.2, var0 = 0.2 - 0.04 = 0.16, / 10 = 0.016
    #   var = 0.0216875, sd 0.147267, half = 1.959964 * 0.147267 = 0.288637
    #   CI (0.161363, 0.738637)
    plain = ppi_mean(Y, F, U, lam=1)
    assert plain.value == pytest.approx(0.45, abs=1e-12)
    assert plain.variance == pytest.approx(0.0216875, abs=1e-12)
    assert plain.ci == pytest.approx((0.16136, 0.73864), abs=5e-6)
    # PPI++: cov0(y, f) = mean(y f) - 0.6 * 0.8 = 0.6 - 0.48 = 0.12;
    #   f over all 50: 34 ones, var1 = 50 * 0.68 * 0.32 / 49 = 0.2220408;
    #   lam = 0.12 / ((1 + 10/40) * 0.2220408) = 0.12 / 0.2775510 = 0.4323529
    #   theta = lam * 0.65 + 0.6 - lam * 0.8 = 0.6 - 0.15 lam = 0.5351471
    #   y - lam f: six (1,1) -> 0.567647, two (0,1) -> -0.432353, two (0,0) -> 0;
    #   mean 0.254118, mean of squares 0.230720, var0 0.166144, / 10 = 0.0166144;
    #   lam^2 * 0.2275 / 40 = 0.0010632; var 0.0176776, sd 0.132957, half 0.260591
    #   CI (0.274556, 0.795738)
    tuned = ppi_mean(Y, F, U)
    assert tuned.lam == pytest.approx(0.43235, abs=5e-6)
    assert tuned.value == pytest.approx(0.53515, abs=5e-6)
    assert tuned.ci == pytest.approx((0.27456, 0.79574), abs=5e-6)
    # lam 0: the labels alone (0.6, var0 0.24 / 10)
    alone = ppi_mean(Y, F, U, lam=0)
    assert alone.value == pytest.approx(0.6)
    assert alone.variance == pytest.approx(0.024)
    assert effective_n(10, alone.variance, tuned.variance) == pytest.approx(
        10 * 0.024 / tuned.variance
    )


def test_a_stratified_example_by_hand() -> None:
    # Stratum a: 4 labelled y=[1,1,0,0], f=[1,1,1,0]; 6 unlabelled f_u=[1,1,1,0,0,0].
    # Stratum b: 2 labelled y=[1,0], f=[1,0]; 8 unlabelled f_u: two 1s, six 0s.
    # N_a = 10, N_b = 10: weights 0.5 and 0.5. Plain PPI (lam 1) per stratum:
    #   a: mean(f_u) 0.5 + mean(y - f) = 0.5 + (0 + 0 - 1 + 0)/4 = 0.25
    #      var0(f_u) = 0.25, / 6 = 0.0416667; y - f = [0,0,-1,0]: var0 = 0.25 - 0.0625
    #      = 0.1875, / 4 = 0.046875; var_a = 0.0885417
    #   b: mean(f_u) 0.25 + mean(y - f) 0 = 0.25; var0(f_u) = 0.1875, / 8 = 0.0234375;
    #      y - f = [0, 0]: var 0; var_b = 0.0234375
    #   theta = 0.5 * 0.25 + 0.5 * 0.25 = 0.25
    #   var = 0.25 * 0.0885417 + 0.25 * 0.0234375 = 0.0279948, sd 0.167317
    #   CI 0.25 -/+ 1.959964 * 0.167317 = (-0.077934, 0.577934)
    a = StratumSample.of_values("a", [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0, 0, 0])
    b = StratumSample.of_values("b", [1, 0], [1, 0], [1, 1] + [0] * 6)
    est = stratified_ppi([a, b], lam=1)
    assert est.weights == [0.5, 0.5]
    assert est.value == pytest.approx(0.25)
    assert est.variance == pytest.approx(0.0279948, abs=1e-7)
    assert est.ci == pytest.approx((-0.077934, 0.577934), abs=1e-6)
    assert est.n == 6
    assert est.n_unlabelled == 14
    # weights follow N_h: a stratum twice as large counts twice as much
    b2 = StratumSample.of_values("b", [1, 0], [1, 0], [1, 1] + [0] * 16)  # N_b = 20
    est2 = stratified_ppi([a, b2], lam=1)
    assert est2.weights == pytest.approx([1 / 3, 2 / 3])
    # b2: mean(f_u) = 2/18, + 0
    assert est2.value == pytest.approx(0.25 / 3 + 2 / 3 * (2 / 18))
    # a stratum whose every unit is labelled is its labels' mean
    full = StratumSample.of_values("full", [1, 0, 0, 0], [1, 1, 0, 0], [])
    only = stratified_ppi([full], lam=1)
    assert only.value == pytest.approx(0.25)
    assert only.strata[0].lam == 0.0
    assert only.variance == pytest.approx(0.1875 / 4)


def test_pooling_is_with_the_next_stratum_and_a_short_tail_with_the_one_before() -> None:
    assert pool_strata([5, 3, 4]) == [[0], [1], [2]]
    assert pool_strata([1, 3, 4]) == [[0, 1], [2]]
    assert pool_strata([0, 1, 1, 4]) == [[0, 1, 2], [3]]
    assert pool_strata([4, 3, 1]) == [[0], [1, 2]]
    assert pool_strata([4, 0, 0]) == [[0, 1, 2]]
    assert pool_strata([1]) == [[0]]
    assert pool_strata([0, 1]) == [[0, 1]]
    assert pool_strata([]) == []


def test_bad_input_is_refused() -> None:
    with pytest.raises(TiapError, match="as long as"):
        ppi_mean([1, 0], [1], [0])
    with pytest.raises(TiapError, match="at least one labelled"):
        ppi_mean([], [], [0, 1])
    with pytest.raises(TiapError, match="finite"):
        ppi_mean([1, math.nan], [1, 0], [0])
    with pytest.raises(TiapError, match="unlabelled"):
        ppi_mean([1, 0], [1, 0], [], lam=1)
    with pytest.raises(TiapError, match="lam"):
        ppi_mean([1, 0], [1, 0], [1], lam=math.inf)
    with pytest.raises(TiapError, match="confidence"):
        ppi_mean([1, 0], [1, 0], [1], confidence=1.5)
    with pytest.raises(TiapError, match="stratum"):
        stratified_ppi([])


def test_predictions_that_do_not_vary_give_the_labels_alone() -> None:
    est = ppi_mean([1, 0, 1, 1], [1, 1, 1, 1], [1] * 10)
    assert est.lam == 0.0
    assert est.value == pytest.approx(0.75)


def _coverage(
    draws: int, n: int, big_n: int, se: float, sp: float, seed: int
) -> tuple[float, float]:
    """The share of ``draws`` in which the 95% CI covers the population's prevalence,
    for PPI++ and plain PPI, with the labelled units a random draw within 3 strata of
    different prevalence (proportional allocation)."""
    rng = np.random.default_rng(seed)
    sizes = np.array([big_n // 2, big_n * 3 // 10, big_n - big_n // 2 - big_n * 3 // 10])
    prevalence = (0.5, 0.25, 0.1)
    alloc = np.floor(n * sizes / sizes.sum()).astype(int)
    alloc[: n - alloc.sum()] += 1
    hits = {None: 0, 1.0: 0}
    for _ in range(draws):
        strata, total = [], 0.0
        for size, p, take in zip(sizes, prevalence, alloc, strict=True):
            truth = rng.random(size) < p
            called = np.where(truth, rng.random(size) < se, rng.random(size) >= sp)
            # the units are drawn independently: the first ``take`` are a random draw
            strata.append(StratumSample.of_values("h", truth[:take], called[:take], called[take:]))
            total += truth.sum()
        target = total / sizes.sum()
        for lam in hits:
            lo, hi = stratified_ppi(strata, lam=lam).ci
            hits[lam] += lo <= target <= hi
    return hits[None] / draws, hits[1.0] / draws


def test_the_interval_covers_the_prevalence_about_95_percent_of_the_time() -> None:
    tuned, plain = _coverage(1000, n=115, big_n=2000, se=0.9, sp=0.8, seed=7)
    assert 0.93 <= tuned <= 0.97
    assert 0.93 <= plain <= 0.97


def test_indicator_counts_give_the_same_estimate_as_the_values() -> None:
    y, f = np.array(Y), np.array(F)
    counts = StratumSample.of_indicators(
        "c",
        both=int((y & f).sum()),
        reference_only=int((y & (1 - f)).sum()),
        prediction_only=int(((1 - y) & f).sum()),
        neither=int(((1 - y) & (1 - f)).sum()),
        unlabelled_positive=26,
        unlabelled=40,
    )
    values = StratumSample.of_values("v", Y, F, U)
    for lam in (None, 0.0, 1.0):
        a, b = counts.estimate(lam), values.estimate(lam)
        assert a.value == pytest.approx(b.value, abs=1e-12)
        assert a.ci == pytest.approx(b.ci, abs=1e-12)
    with pytest.raises(TiapError, match="exceeds"):
        StratumSample.of_indicators(
            "x",
            both=1,
            reference_only=0,
            prediction_only=0,
            neither=0,
            unlabelled_positive=3,
            unlabelled=2,
        )
