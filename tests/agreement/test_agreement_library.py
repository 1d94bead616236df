"""The report's point estimates come from statsmodels, krippendorff and
scikit-learn (tiap.agreement.library): fed in the shape each library wants,
cross-checked against tiap's own formulas (the bootstrap path on the full
sample), and mapped to None with tiap's reasons where the libraries return NaN
or raise."""

from __future__ import annotations

import subprocess
import sys
import warnings

import krippendorff
import numpy as np
import pytest
import sklearn.metrics
import statsmodels.stats.inter_rater
from agreement_support import random_codes

from tiap.agreement import CaseMeta, LabelEntry, LabelTable, RaterInfo, compute_report
from tiap.agreement import formulas as st
from tiap.agreement import library as lib
from tiap.rubric import Rubric

A, B = 0, 1
X, M = -1, -2  # invalid, missing


def _full_sample(stat: st.Stat) -> float:
    """The bootstrap path with every case drawn once: tiap's formula on the sums."""
    weights = np.ones((1, stat.features.shape[0]))
    return float(stat.finish(weights @ stat.features)[0])


# ------------------------------------------- libraries vs tiap's formulas


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [2, 3, 5])
def test_library_points_equal_the_bootstrap_path_on_the_full_sample(seed: int, k: int) -> None:
    codes = random_codes(seed, n=90, m=5, k=k, missing=0.2)
    a, b = codes[:, 0], codes[:, 3]
    assert lib.fleiss_kappa(codes, k) == pytest.approx(_full_sample(st.fleiss_stat(codes, k)))
    assert lib.krippendorff_alpha(codes, k) == pytest.approx(
        _full_sample(st.krippendorff_stat(codes, k))
    )
    assert lib.cohen_kappa(a, b, k) == pytest.approx(_full_sample(st.cohen_stat(a, b, k)))
    assert lib.accuracy(a, b) == pytest.approx(_full_sample(st.agreement_stat(a, b, k)))
    conf = lib.confusion_matrix(a, b, k)
    assert conf.dtype == np.int64
    assert conf.tolist() == st.confusion_matrix(a, b, k).astype(int).tolist()


def test_categories_nobody_used_do_not_change_the_figures() -> None:
    # only categories 0 and 2 of 4 are used: labels= and value_domain= keep 1 and 3
    codes = np.array([[0, 0, 2], [2, 2, 2], [0, 2, 0], [0, 0, 0], [2, 2, M]])
    assert lib.cohen_kappa(codes[:, 0], codes[:, 1], 4) == pytest.approx(
        lib.cohen_kappa(codes[:, 0] // 2, codes[:, 1] // 2, 2)
    )
    assert lib.krippendorff_alpha(codes, 4) == pytest.approx(lib.krippendorff_alpha(codes // 2, 2))
    assert lib.confusion_matrix(codes[:, 0], codes[:, 1], 4).tolist() == [
        [2, 0, 1, 0],
        [0, 0, 0, 0],
        [0, 0, 2, 0],
        [0, 0, 0, 0],
    ]


def test_fleiss_uses_complete_cases_only() -> None:
    # as by hand in test_agreement_formulas: AAA, AAB, BBB, and an incomplete case
    codes = np.array([[A, A, A], [A, A, B], [B, B, B], [A, X, M]])
    assert lib.fleiss_kappa(codes, 2) == pytest.approx(22 / 40, abs=1e-12)
    assert lib.krippendorff_alpha(codes, 2) == pytest.approx(0.6, abs=1e-12)


# ------------------------------------------------ undefined: NaN or raise -> None

SAME = np.array([[A, A], [A, A], [A, A]])
HOLES = np.array([[A, M], [M, B]])  # no case labelled by both raters
ONE_RATER = np.array([[A], [B]])


def _lib_raw(call):  # what the library itself gives: a value, or the exception type
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call()
        except ValueError:
            return ValueError


def test_libraries_signal_undefined_figures_with_nan_or_an_error() -> None:
    """Checked on this version of each library; tiap maps every case to None."""
    sm = statsmodels.stats.inter_rater.fleiss_kappa
    assert np.isnan(_lib_raw(lambda: sm(np.array([[2, 0], [2, 0], [2, 0]]), method="fleiss")))
    assert _lib_raw(lambda: sm(np.zeros((0, 2)), method="fleiss")) is ValueError
    assert np.isnan(_lib_raw(lambda: sm(np.array([[1, 0], [0, 1]]), method="fleiss")))

    def alpha(rel: np.ndarray, k: int = 2) -> object:
        return _lib_raw(
            lambda: krippendorff.alpha(
                reliability_data=rel, level_of_measurement="nominal", value_domain=list(range(k))
            )
        )

    assert np.isnan(alpha(SAME.T.astype(float), 3))
    assert alpha(np.where(HOLES >= 0, HOLES, np.nan).T) is ValueError
    assert alpha(ONE_RATER.T.astype(float)) is ValueError

    kappa = sklearn.metrics.cohen_kappa_score
    assert np.isnan(_lib_raw(lambda: kappa(SAME[:, 0], SAME[:, 1], labels=[0, 1, 2])))
    empty = np.array([], dtype=int)
    assert _lib_raw(lambda: kappa(empty, empty, labels=[0, 1])) is ValueError
    assert _lib_raw(lambda: sklearn.metrics.confusion_matrix(empty, empty, labels=[0])) is (
        ValueError
    )
    assert _lib_raw(lambda: sklearn.metrics.accuracy_score(empty, empty)) is ValueError


def test_undefined_figures_are_none_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning or UserWarning either
        assert lib.fleiss_kappa(SAME, 3) is None
        assert lib.fleiss_kappa(HOLES, 2) is None
        assert lib.fleiss_kappa(ONE_RATER, 2) is None
        assert lib.fleiss_kappa(np.zeros((3, 0), dtype=int), 2) is None
        assert lib.krippendorff_alpha(SAME, 3) is None
        assert lib.krippendorff_alpha(HOLES, 2) is None
        assert lib.krippendorff_alpha(ONE_RATER, 2) is None
        # one category among the pairable labels (the B is alone on its case)
        assert lib.krippendorff_alpha(np.array([[A, A], [A, A], [B, M]]), 2) is None
        assert lib.cohen_kappa(SAME[:, 0], SAME[:, 1], 3) is None
        assert lib.cohen_kappa(HOLES[:, 0], HOLES[:, 1], 2) is None
        assert lib.accuracy(HOLES[:, 0], HOLES[:, 1]) is None
        assert lib.confusion_matrix(HOLES[:, 0], HOLES[:, 1], 2).tolist() == [[0, 0], [0, 0]]
        assert lib.confusion_matrix(SAME[:, 0], SAME[:, 1], 1).tolist() == [[3]]
        # defined, though degenerate: never agreeing constant raters have kappa 0
        assert lib.cohen_kappa(np.array([A, A]), np.array([B, B]), 2) == 0.0


def _table(rows: dict[str, list[str | None]]) -> LabelTable:
    """``rows``: rater -> one label per case (None: invalid; "-": no label)."""
    n = len(next(iter(rows.values())))
    return LabelTable(
        cases=[CaseMeta(case_id=f"c{i}") for i in range(n)],
        raters=[RaterInfo(name=r, kind="judge") for r in rows],
        labels=[
            LabelEntry(case_id=f"c{i}", rater=r, label=lab)
            for r, labs in rows.items()
            for i, lab in enumerate(labs)
            if lab != "-"
        ],
    )


def test_report_keeps_the_reasons_for_undefined_figures() -> None:
    same = compute_report(_table({"a": ["y", "y", "y"], "b": ["y", "y", "y"]}), resamples=20)
    chance = "every label is the same category: chance agreement is 1"
    assert same.fleiss_kappa["labels"].model_dump() == {
        "value": None,
        "ci": None,
        "n": 3,
        "reason": chance,
        "ci_method": None,
        "ci_unreliable": False,
    }
    assert same.krippendorff_alpha["labels"].value is None
    assert same.krippendorff_alpha["labels"].reason == (
        "every label is the same category: expected disagreement is 0"
    )
    pair = same.cohen_kappa[0]
    assert (pair.kappa, pair.ci) == (None, None)
    assert pair.reason == (
        "both gave one and the same category on every case: chance agreement is 1"
    )

    holes = compute_report(_table({"a": ["y", "-", "n"], "b": ["-", "n", None]}), resamples=20)
    assert holes.fleiss_kappa["labels"].reason == "no case has a valid label from every rater"
    assert holes.krippendorff_alpha["labels"].reason == "no case has two or more valid labels"
    assert holes.cohen_kappa[0].kappa is None
    assert holes.cohen_kappa[0].reason == "no case labelled validly by both"

    one = compute_report(_table({"a": ["y", "n"]}), resamples=20)
    assert one.fleiss_kappa["labels"].reason == "fewer than two raters"
    assert one.fleiss_kappa["labels"].value is None
    for report in (same, holes, one):
        assert "NaN" not in report.model_dump_json()


# --------------------------------------------- the report calls the libraries


def test_report_points_are_the_libraries_values(
    monkeypatch: pytest.MonkeyPatch, rubric: Rubric
) -> None:
    """Each point estimate is what the library returned, given in the library's
    shape: raters x items for krippendorff, complete items x categories for
    statsmodels, valid label vectors with labels= for scikit-learn."""
    rng = np.random.default_rng(3)
    names = rubric.label_names
    n, raters = 60, ["j1", "j2", "j3", "h1"]
    rows: dict[str, list[str | None]] = {
        r: [
            "-" if u < 0.05 else None if u < 0.1 else names[int(v)]
            for u, v in zip(rng.random(n), rng.integers(0, 3, n), strict=True)
        ]
        for r in raters
    }
    base = _table(rows)
    table = base.model_copy(
        update={"raters": [*base.raters[:3], RaterInfo(name="h1", kind="human")]}
    )
    seen: dict[str, list[tuple[object, ...]]] = {}

    def spy(module: object, name: str, record) -> None:
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            value = real(*args, **kwargs)
            seen.setdefault(name, []).append((*record(*args, **kwargs), value))
            return value

        monkeypatch.setattr(module, name, wrapper)

    spy(krippendorff, "alpha", lambda **kw: (kw["reliability_data"].shape, kw["value_domain"]))
    spy(statsmodels.stats.inter_rater, "fleiss_kappa", lambda t, method: (t.shape, t.sum(1)))
    spy(
        sklearn.metrics,
        "cohen_kappa_score",
        lambda x, y, labels: (int(min(x.min(), y.min())), tuple(labels)),
    )
    spy(sklearn.metrics, "confusion_matrix", lambda x, y, labels: (tuple(labels),))
    spy(sklearn.metrics, "accuracy_score", lambda x, y: (len(x),))

    rep = compute_report(table, rubric, raters=raters, resamples=0)

    alphas = seen["alpha"]
    assert [(shape, dom) for shape, dom, _ in alphas] == [((4, n), [0, 1, 2]), ((4, n), [0, 1])]
    assert [rep.krippendorff_alpha[s].value for s in ("labels", "binary")] == [
        v for *_, v in alphas
    ]
    # Fleiss over the four raters, then over the three judges (the gate), per scale
    fleiss = seen["fleiss_kappa"]
    complete = rep.n_complete
    assert fleiss[0][0] == (complete, 3)
    assert set(fleiss[0][1].tolist()) == {4}  # the same number of raters on every item
    assert rep.fleiss_kappa["labels"].value == fleiss[0][2]
    assert rep.fleiss_kappa["binary"].value == next(v for s, _, v in fleiss if s[1] == 2)
    kappas = seen["cohen_kappa_score"]
    assert all(low >= 0 and labels in {(0, 1, 2), (0, 1)} for low, labels, _ in kappas)
    pair_values = [p.kappa for p in rep.cohen_kappa] + [p.binary.kappa for p in rep.cohen_kappa]
    assert set(pair_values) <= {v for *_, v in kappas}
    vs = rep.vs_reference
    assert vs.available
    judge = vs.raters[0].labels
    assert judge.kappa.value in {v for *_, v in kappas}
    assert judge.accuracy.value in {v for *_, v in seen["accuracy_score"]}
    assert judge.confusion in [v.tolist() for *_, v in seen["confusion_matrix"]]
    assert all(labels in {(0, 1, 2), (0, 1)} for labels, _ in seen["confusion_matrix"])


def test_libraries_are_imported_only_when_a_report_is_computed() -> None:
    code = (
        "import sys\n"
        "from tiap.cli import main\n"
        "try:\n    main(['--help'])\n"
        "except SystemExit:\n    pass\n"
        "libs = ('krippendorff', 'sklearn', 'statsmodels')\n"
        "print('HELP', [m for m in libs if m in sys.modules])\n"
        "from tiap.agreement import CaseMeta, LabelEntry, LabelTable, RaterInfo, compute_report\n"
        "t = LabelTable(cases=[CaseMeta(case_id=c) for c in 'pq'],\n"
        "    raters=[RaterInfo(name='a'), RaterInfo(name='b')],\n"
        "    labels=[LabelEntry(case_id=c, rater=r, label=l) for c, r, l in\n"
        "        [('p', 'a', 'x'), ('p', 'b', 'x'), ('q', 'a', 'y'), ('q', 'b', 'x')]])\n"
        "compute_report(t, resamples=0)\n"
        "print('REPORT', [m for m in libs if m in sys.modules])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert "HELP []" in proc.stdout
    assert "REPORT ['krippendorff', 'sklearn', 'statsmodels']" in proc.stdout
