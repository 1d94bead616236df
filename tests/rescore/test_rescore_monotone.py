"""Monotone target orderings as the paper defines them (Table 7): the targets are ordered
Raw, Canonical, Source, and an ordering is monotone when the scores follow that order
(Source >= Canonical >= Raw). tiap's own check, containment consistency (no target below
one it contains: Source >= max(Raw, Canonical)), is reported beside it under its name."""

from __future__ import annotations

import pytest

from bundle_support import make_bundle, mem
from tiap.rescore.api import rescore_bundle
from tiap.rescore.ordering import is_containment_consistent, is_monotone
from tiap.rescore.report_models import TargetOrder

# q1 and q2: each one raw turn, one canonical fact and one summary (derived, not
# canonical) of its source; noise memories of an unrelated source.
STORE = [
    mem("r1", "s1", "raw"),
    mem("f1", "s1", "fact"),
    mem("u1", "s1", "summary"),
    mem("r2", "s2", "raw"),
    mem("f2", "s2", "fact"),
    mem("u2", "s2", "summary"),
    *(mem(f"n{i}", "s9", "raw") for i in range(1, 4)),
]
QUERIES = {"q1": ["s1"], "q2": ["s2"]}
# what ranks first decides every measure at k = 1
RUNS = {
    # hit@1: q1 (fact) S1 C1 R0, q2 (summary) S1 C0 R0 -> source 1 > canonical .5 > raw 0
    "scr": {"q1": ["f1", "n1"], "q2": ["u2", "n1"]},
    # hit@1: q1 (raw) S1 R1 C0, q2 (summary) S1 R0 C0 -> source 1 > raw .5 > canonical 0
    "src": {"q1": ["r1", "n1"], "q2": ["u2", "n1"]},
    # recall@1: facts first: canonical 1 > source 1/3 > raw 0; hit@1: source = canonical
    "csr": {"q1": ["f1", "n1"], "q2": ["f2", "n1"]},
    # hit@1: raw turns first: raw = source 1 > canonical 0
    "rs_c": {"q1": ["r1", "n1"], "q2": ["r2", "n1"]},
}


@pytest.fixture(scope="module")
def orders() -> dict[str, dict[str, TargetOrder]]:
    bundle = make_bundle(QUERIES, {"st": STORE}, {r: ("st", rk) for r, rk in RUNS.items()})
    report = rescore_bundle(bundle, ks=(1,), metrics="hit,recall", resamples=10).report
    assert report.target_order is not None
    return report.target_order.runs


def test_source_above_canonical_above_raw_is_monotone(orders) -> None:
    o = orders["scr"]["hit@1"]
    assert (o.n, o.order) == (2, "source > canonical > raw")
    assert o.monotone is True
    assert o.containment_consistent is True


def test_source_above_raw_above_canonical_is_nonmonotone(orders) -> None:
    """The pattern tiap's containment check passes and the paper calls nonmonotone."""
    o = orders["src"]["hit@1"]
    assert o.order == "source > raw > canonical"
    assert o.monotone is False
    assert o.containment_consistent is True


def test_canonical_above_source_above_raw_is_nonmonotone(orders) -> None:
    o = orders["csr"]["recall@1"]
    assert o.order == "canonical > source > raw"
    assert o.monotone is False
    assert o.containment_consistent is False


def test_ties_follow_the_order_when_the_rest_does(orders) -> None:
    tie = orders["csr"]["hit@1"]  # source = canonical > raw
    assert tie.order == "source = canonical > raw"
    assert tie.monotone is True
    assert tie.containment_consistent is True
    raw_tie = orders["rs_c"]["hit@1"]  # raw = source > canonical: canonical below raw
    assert raw_tie.order == "raw = source > canonical"
    assert raw_tie.monotone is False
    assert raw_tie.containment_consistent is True


def test_the_tie_tolerance_is_the_reports() -> None:
    tol = 1e-9
    # within the tolerance a lower score counts as a tie, beyond it as below
    assert is_monotone({"raw": 0.3, "canonical": 0.3 - 5e-10, "source": 0.5}, tol) is True
    assert is_monotone({"raw": 0.3, "canonical": 0.3 - 5e-9, "source": 0.5}, tol) is False
    assert is_monotone({"raw": 0.3, "canonical": 0.4, "source": 0.4 - 5e-10}, tol) is True
    assert is_monotone({"raw": 0.3, "canonical": 0.4, "source": 0.4 - 5e-9}, tol) is False
    # only the analysed targets are checked, in the paper's order
    assert is_monotone({"raw": 0.2, "source": 0.5}, tol) is True
    assert is_monotone({"canonical": 0.6, "source": 0.5}, tol) is False
    assert is_monotone({"source": 0.5}, tol) is None
    assert is_containment_consistent({"raw": 0.5 + 5e-10, "source": 0.5}, tol) is True


def test_both_checks_in_the_markdown() -> None:
    bundle = make_bundle(QUERIES, {"st": STORE}, {r: ("st", rk) for r, rk in RUNS.items()})
    result = rescore_bundle(bundle, ks=(1,), metrics="hit,recall", resamples=10)
    md = result.markdown()
    assert "monotone (paper)" in md
    assert "containment consistent" in md
    assert "source > raw > canonical (!)" in md  # nonmonotone, containment consistent
    assert "canonical > source > raw (!) (c)" in md
    counts = result.report.target_order
    assert counts is not None
    assert counts.n_not_monotone["hit@1"] == 2  # src and rs_c
    assert counts.n_not_containment_consistent["hit@1"] == 0
    # recall@1 falls as a target grows: every run is nonmonotone on it (see RUNS)
    assert counts.n_not_monotone["recall@1"] == 4


def test_suite_counts_nonmonotone_runs_by_the_papers_rule() -> None:
    from tiap.rescore.suite import suite_report
    from tiap.rescore.suite_render import markdown

    bundle = make_bundle(QUERIES, {"st": STORE}, {r: ("st", rk) for r, rk in RUNS.items()})
    report = rescore_bundle(bundle, ks=(1,), metrics="hit,recall", resamples=10).report
    suite = suite_report([("Dialogue/X/t", "Dialogue", report)], "hit@1")
    head = suite.tasks[0].headline
    # hit@1: scr and csr follow Source >= Canonical >= Raw; src and rs_c do not
    assert (head.n_ordered_runs, head.n_not_monotone) == (4, 2)
    assert head.n_not_containment_consistent == 0
    md = markdown(suite)
    assert "nonmonotone runs (paper)" in md
    assert "| 2 of 4 | 0 of 4 |" in md
