"""Gwet's AC1/AC2, weighted kappa and ordinal alpha against hand-worked tables, Gwet's
published examples, scikit-learn and krippendorff."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from agreement_support import random_codes
from sklearn.metrics import cohen_kappa_score

from tiap.agreement import beyond_formulas as bf
from tiap.agreement import formulas as st

#: the kappa paradox: two raters, 100 cases, both say "yes" almost always
PARADOX = np.array([[90, 5], [4, 1]])
#: Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed.: two abstractors classify 100
#: pregnancies as ectopic / abnormal intrauterine / normal intrauterine (irrCAC's
#: ``cont3x3abstractors``; rows one abstractor, columns the other)
ABSTRACTORS = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
#: Gwet (2014) p. 120 (irrCAC's ``cac.raw4raters``): 4 raters, 12 subjects, 5 categories
#: 1..5, 0 = no rating
RAW_4RATERS = np.array(
    [
        [1, 1, 0, 1],
        [2, 2, 3, 2],
        [3, 3, 3, 3],
        [3, 3, 3, 3],
        [2, 2, 2, 2],
        [1, 2, 3, 4],
        [4, 4, 4, 4],
        [1, 1, 2, 1],
        [2, 2, 2, 2],
        [0, 5, 5, 5],
        [0, 0, 1, 1],
        [0, 0, 3, 0],
    ]
)


def _raw(table: np.ndarray) -> np.ndarray:
    """A two-rater contingency table as cases x 2 codes."""
    k = table.shape[0]
    rows = [[i, j] for i in range(k) for j in range(k) for _ in range(int(table[i, j]))]
    return np.array(rows)


def test_kappa_paradox_table() -> None:
    # p_o = 0.91; Cohen: p_e = 0.95 x 0.94 + 0.05 x 0.06 = 0.8986 -> (0.91 - 0.8986) / 0.1014
    # = 0.1346. AC1: pi = (0.945, 0.055), p_e = 2 x 0.945 x 0.055 = 0.10395 -> 0.89956.
    codes = _raw(PARADOX)
    assert st.cohen_kappa(codes[:, 0], codes[:, 1], 2) == pytest.approx(0.1346, abs=5e-5)
    assert bf.pair_gwet(PARADOX) == pytest.approx(0.89956, abs=5e-6)
    assert bf.point(bf.gwet_stat(codes, 2)) == pytest.approx(0.89956, abs=5e-6)
    pair = bf.pair_gwet_stat(codes[:, 0], codes[:, 1], 2)
    assert bf.point(pair) == pytest.approx(0.89956, abs=5e-6)


def test_gwet_abstractors_table() -> None:
    # By hand in the module doc: AC1 0.84933, quadratic AC2 0.94024 (irrCAC's fixtures);
    # linear AC2 0.900 (irrCAC's, to three places).
    assert bf.pair_gwet(ABSTRACTORS) == pytest.approx(0.84933, abs=5e-6)
    assert bf.pair_gwet(ABSTRACTORS, "quadratic") == pytest.approx(0.94024, abs=5e-6)
    assert bf.pair_gwet(ABSTRACTORS, "linear") == pytest.approx(0.900, abs=5e-4)
    codes = _raw(ABSTRACTORS)
    assert bf.point(bf.gwet_stat(codes, 3)) == pytest.approx(0.84933, abs=5e-6)
    assert bf.point(bf.gwet_stat(codes, 3, "quadratic")) == pytest.approx(0.94024, abs=5e-6)


def test_gwet_raw_ratings_with_missing_labels() -> None:
    # irrCAC on cac.raw4raters: AC1 0.77544 (p_a 0.81818, p_e 0.19032); linear AC2 0.859;
    # quadratic AC2 0.914 (its fixtures, to three places)
    codes = np.where(RAW_4RATERS > 0, RAW_4RATERS - 1, -1)
    assert bf.point(bf.gwet_stat(codes, 5)) == pytest.approx(0.77544, abs=5e-6)
    assert bf.point(bf.gwet_stat(codes, 5, "linear")) == pytest.approx(0.859, abs=5e-4)
    assert bf.point(bf.gwet_stat(codes, 5, "quadratic")) == pytest.approx(0.914, abs=5e-4)


def test_gwet_two_by_two_by_hand() -> None:
    # [[40, 10], [5, 45]], n = 100: p_a = 0.85; rows (50, 50), columns (45, 55):
    # pi = ((50 + 45)/200, (50 + 55)/200) = (0.475, 0.525); q = 2, identity weights
    # (sum w = 2): p_e = 2/(2 x 1) x (0.475 x 0.525 + 0.525 x 0.475) = 0.49875;
    # AC1 = (0.85 - 0.49875) / 0.50125 = 0.700748
    table = np.array([[40, 10], [5, 45]])
    assert bf.pair_gwet(table) == pytest.approx(0.35125 / 0.50125, abs=1e-12)


def test_an_unused_label_still_counts() -> None:
    # Labels A, B of a three-label scale (C never given): [[6, 2], [1, 1]] in the corner,
    # n = 10, p_a = 0.7; rows (8, 2), columns (7, 3): pi = (15/20, 5/20, 0) = (0.75, 0.25, 0);
    # sum pi(1 - pi) = 0.1875 + 0.1875 = 0.375.
    # k = 3: p_e = 3/(3 x 2) x 0.375 = 0.1875 -> AC1 = 0.5125 / 0.8125 = 0.630769
    # k = 2 (the label list inferred from the data) would give p_e = 0.375 -> 0.325 / 0.625
    table3 = np.array([[6, 2, 0], [1, 1, 0], [0, 0, 0]])
    codes = _raw(table3)
    assert bf.point(bf.gwet_stat(codes, 3)) == pytest.approx(0.5125 / 0.8125, abs=1e-12)
    assert bf.point(bf.gwet_stat(codes, 2)) == pytest.approx(0.325 / 0.625, abs=1e-12)
    assert bf.pair_gwet(table3) == pytest.approx(0.5125 / 0.8125, abs=1e-12)


def test_ac1_is_defined_where_kappa_is_not() -> None:
    # every label the same: kappa undefined (chance agreement 1); AC1: p_e = 0, AC1 = 1
    codes = np.zeros((5, 3), dtype=np.int64)
    assert np.isnan(st.fleiss_kappa(codes, 2))
    assert bf.point(bf.gwet_stat(codes, 2)) == pytest.approx(1.0)
    single = bf.gwet_stat(np.array([[0, -1], [1, -2]]), 2)
    assert np.isnan(bf.point(single))
    assert single.explain(single.features.sum(axis=0)) == "no case has two or more valid labels"


@pytest.mark.parametrize("seed", range(6))
def test_weighted_kappa_equals_scikit_learn(seed: int) -> None:
    codes = random_codes(seed, 80, 2, 4, 0.1)
    a, b = codes[:, 0], codes[:, 1]
    both = (a >= 0) & (b >= 0)
    for weights in ("linear", "quadratic"):
        expected = cohen_kappa_score(a[both], b[both], weights=weights, labels=[0, 1, 2, 3])
        got = bf.point(bf.weighted_kappa_stat(a, b, 4, weights))  # type: ignore[arg-type]
        assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_ordinal_alpha_equals_krippendorff(seed: int) -> None:
    codes = random_codes(seed, 60, 5, 4, 0.2)
    data = np.where(codes >= 0, codes, np.nan).T  # raters x items
    expected = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
    )
    assert bf.point(bf.ordinal_alpha_stat(codes, 4)) == pytest.approx(expected, abs=1e-10)


def test_ordinal_alpha_differs_from_gwet_ordinal_weights() -> None:
    # two different ordinal notions: Krippendorff's metric depends on the margins,
    # Gwet's weights only on the distance
    codes = random_codes(3, 40, 5, 3, 0.0)
    alpha = bf.point(bf.ordinal_alpha_stat(codes, 3))
    ac2 = bf.point(bf.gwet_stat(codes, 3, "quadratic"))
    assert abs(alpha - ac2) > 0.01


def test_weights() -> None:
    assert bf.weights_matrix(3, "quadratic").tolist() == [
        [1.0, 0.75, 0.0],
        [0.75, 1.0, 0.75],
        [0.0, 0.75, 1.0],
    ]
    assert bf.weights_matrix(3, "linear").tolist() == [
        [1.0, 0.5, 0.0],
        [0.5, 1.0, 0.5],
        [0.0, 0.5, 1.0],
    ]
    assert bf.weights_matrix(2, "quadratic").tolist() == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("seed", range(4))
def test_features_give_the_same_value_resampled(seed: int) -> None:
    # a replicate is finish(weights @ features): check it on one explicit resample
    codes = random_codes(seed, 50, 4, 3, 0.15)
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, 50, 50)
    weights = np.bincount(drawn, minlength=50).astype(np.float64)
    for stat_of in (
        lambda c: bf.gwet_stat(c, 3),
        lambda c: bf.gwet_stat(c, 3, "quadratic"),
        lambda c: bf.ordinal_alpha_stat(c, 3),
    ):
        stat = stat_of(codes)
        replicate = stat.finish((weights @ stat.features)[None, :])[0]
        assert replicate == pytest.approx(bf.point(stat_of(codes[drawn])), abs=1e-12)
