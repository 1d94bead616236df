"""The agreement formulas against hand-worked cases and against statsmodels,
krippendorff and scikit-learn."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from agreement_support import random_codes
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from tiap.agreement import formulas as st

A, B, C = 0, 1, 2
X = -1  # invalid
M = -2  # missing


# ------------------------------------------------------------------ by hand


def test_fleiss_by_hand() -> None:
    # Cases (3 raters, categories A/B): AAA, AAB, BBB, and A-- (incomplete, left out).
    # P_i = (sum C^2 - 3) / 6: 1, 1/3, 1  -> P = 7/9
    # p_A = 5/9, p_B = 4/9 -> P_e = 41/81;  kappa = (63/81 - 41/81) / (40/81) = 22/40
    codes = np.array([[A, A, A], [A, A, B], [B, B, B], [A, X, M]])
    stat = st.fleiss_stat(codes, 2)
    assert stat.n == 3
    assert st.fleiss_kappa(codes, 2) == pytest.approx(22 / 40, abs=1e-12)


def test_krippendorff_by_hand() -> None:
    # Same cases. Pairable units: the first three (the fourth has one value).
    # D = sum_u (m_u^2 - sum n_uc^2)/(m_u - 1) = 0 + (9 - 5)/2 + 0 = 2
    # n_A = 5, n_B = 4, n = 9; n^2 - sum n_c^2 = 81 - 41 = 40
    # alpha = 1 - (n - 1) D / 40 = 1 - 16/40 = 0.6
    codes = np.array([[A, A, A], [A, A, B], [B, B, B], [A, X, M]])
    assert st.krippendorff_stat(codes, 2).n == 3
    assert st.krippendorff_alpha(codes, 2) == pytest.approx(0.6, abs=1e-12)


def test_krippendorff_by_hand_with_missing() -> None:
    # Units: (A,A), (A,B,B), (B,B,-). D = 0 + (9 - 5)/2 + 0 = 2.
    # n_A = 3, n_B = 4, n = 7; n^2 - sum n_c^2 = 49 - 25 = 24; alpha = 1 - 6*2/24 = 0.5
    codes = np.array([[A, A, M], [A, B, B], [B, B, X]])
    assert st.krippendorff_alpha(codes, 2) == pytest.approx(0.5, abs=1e-12)


def test_cohen_by_hand() -> None:
    # a: A A B B; b: A B B B (a fifth case is invalid for b: left out)
    # confusion [[1, 1], [0, 2]], p_o = 3/4; marginals a (2, 2), b (1, 3)
    # p_e = (2*1 + 2*3)/16 = 1/2; kappa = (3/4 - 1/2) / (1/2) = 1/2
    a = np.array([A, A, B, B, A])
    b = np.array([A, B, B, B, X])
    assert st.cohen_kappa(a, b, 2) == pytest.approx(0.5, abs=1e-12)
    assert st.confusion_matrix(a, b, 2).tolist() == [[1, 1], [0, 2]]
    assert st.cohen_stat(a, b, 2).n == 4


def test_mean_pairwise_agreement_by_hand() -> None:
    # raters r0, r1, r2 on 3 cases: (A,A,B), (B,B,B), (A,-,A)
    # pair r0-r1: cases 1,2 -> 2/2 = 1; r0-r2: cases 1,2,3 -> 2/3; r1-r2: cases 1,2 -> 1/2
    # mean = (1 + 2/3 + 1/2) / 3 = 13/18
    codes = np.array([[A, A, B], [B, B, B], [A, M, A]])
    stat = st.mean_pairwise_agreement_stat(codes, 2)
    value = stat.finish(stat.features.sum(axis=0)[None, :])[0]
    assert value == pytest.approx(13 / 18, abs=1e-12)


def test_undefined_figures_are_nan_with_reasons() -> None:
    same = np.array([[A, A], [A, A], [A, A]])
    for stat in (
        st.fleiss_stat(same, 3),
        st.krippendorff_stat(same, 3),
        st.cohen_stat(same[:, 0], same[:, 1], 3),
    ):
        sums = stat.features.sum(axis=0)
        assert np.isnan(stat.finish(sums[None, :])[0])
        assert "same" in (stat.explain(sums) or "")
    holes = np.array([[A, M], [M, B]])
    fl = st.fleiss_stat(holes, 2)
    assert fl.explain(fl.features.sum(axis=0)) == "no case has a valid label from every rater"
    co = st.cohen_stat(holes[:, 0], holes[:, 1], 2)
    assert co.explain(co.features.sum(axis=0)) == "no case labelled validly by both"
    one = st.fleiss_stat(np.array([[A], [B]]), 2)
    assert one.explain(one.features.sum(axis=0)) == "fewer than two raters"
    kr = st.krippendorff_stat(holes, 2)
    assert kr.explain(kr.features.sum(axis=0)) == "no case has two or more valid labels"


def test_perfect_agreement_is_one() -> None:
    codes = np.array([[A, A, A], [B, B, B], [C, C, C], [A, A, A]])
    assert st.fleiss_kappa(codes, 3) == pytest.approx(1.0)
    assert st.krippendorff_alpha(codes, 3) == pytest.approx(1.0)
    assert st.cohen_kappa(codes[:, 0], codes[:, 2], 3) == pytest.approx(1.0)


# ------------------------------------------------------------- vs libraries


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_matches_statsmodels(seed: int) -> None:
    codes = random_codes(seed, n=60, m=5, k=3, missing=0.05)
    complete = codes[(codes >= 0).all(axis=1)]
    table = np.stack([(complete == c).sum(axis=1) for c in range(3)], axis=1)
    assert st.fleiss_kappa(codes, 3) == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [2, 3, 5])
def test_krippendorff_matches_library(seed: int, k: int) -> None:
    codes = random_codes(seed, n=70, m=6, k=k, missing=0.25)
    # the library wants raters x units, NaN for missing
    reliability = np.where(codes >= 0, codes, np.nan).T.astype(float)
    expected = krippendorff.alpha(
        reliability_data=reliability, level_of_measurement="nominal", value_domain=list(range(k))
    )
    assert st.krippendorff_alpha(codes, k) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_cohen_matches_sklearn(seed: int) -> None:
    codes = random_codes(seed, n=80, m=2, k=4, missing=0.2)
    a, b = codes[:, 0], codes[:, 1]
    both = (a >= 0) & (b >= 0)
    expected = cohen_kappa_score(a[both], b[both], labels=[0, 1, 2, 3])
    assert st.cohen_kappa(a, b, 4) == pytest.approx(expected, abs=1e-9)


def test_collapse_keeps_missing_codes() -> None:
    codes = np.array([[A, B, C, X, M]])
    assert st.collapse_codes(codes, [0, 0, 1]).tolist() == [[0, 0, 1, X, M]]
