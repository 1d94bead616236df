"""Calibrated prevalence in the agreement report: the PPI figure is the stratified
estimate over the sampling strata (and, without strata, the plain PPI++ estimate),
strata short of labels are pooled and named, cases without a majority or with an
unresolved reference are counted and left out, Rogan-Gladen per rater and for the
majority, and the section in report.md, report.html (in Chromium) and report.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from agreement_support import add_labels, validation_workspace

from support.browser import assert_renders
from tiap.agreement import (
    CaseMeta,
    LabelEntry,
    LabelTable,
    RaterInfo,
    compute_report,
    labels_from_file,
    labels_from_workspace,
    write_report,
)
from tiap.agreement.calibrated import DESIGN, NO_DESIGN
from tiap.agreement.label_export import export_labels
from tiap.cases.sample import stratum_order
from tiap.cases.workspace import Workspace
from tiap.report.palette import PALETTE
from tiap.rubric import Rubric
from tiap.stats import StratumSample, pool_strata, ppi_mean, rogan_gladen, stratified_ppi

N_CASES, N_LABELLED = 90, 30
#: the case whose two humans disagree (its reference is unresolved)
DISPUTED = 0
#: the validation case whose judges split 2-2-1 (no majority)
SPLIT = 26


def _labels(rubric: Rubric) -> tuple[list[str], dict[str, list[str]]]:
    """The truth, and five judges who see it 80% of the time."""
    names = rubric.label_names
    rng = np.random.default_rng(11)
    truth = [names[i] for i in rng.choice(3, size=N_CASES, p=[0.5, 0.3, 0.2])]
    judges = {}
    for j in range(5):
        noise = rng.choice(3, size=N_CASES)
        right = rng.random(N_CASES) < 0.8
        judges[f"judge-{j}"] = [
            t if ok else names[k] for t, ok, k in zip(truth, right, noise, strict=True)
        ]
    split = [names[0], names[0], names[1], names[1], names[2]]
    for j, label in enumerate(split):
        judges[f"judge-{j}"][SPLIT] = label
    return truth, judges


@pytest.fixture
def calibrated_ws(tmp_path: Path, rubric: Rubric) -> Workspace:
    """90 cases in three rank buckets, five judges on every case, two humans on the
    first 30 (the validation subset); they disagree on one."""
    ws = validation_workspace(tmp_path / "ws.sqlite", N_LABELLED, beyond=N_CASES - N_LABELLED)
    truth, judges = _labels(rubric)
    for name, labels in judges.items():
        add_labels(ws, name, labels, rubric=rubric)
    ids = ws.case_ids(subset="validation")
    names = rubric.label_names
    bob = list(truth[:N_LABELLED])
    bob[DISPUTED] = names[(names.index(bob[DISPUTED]) + 1) % 3]
    add_labels(ws, "alice", truth[:N_LABELLED], kind="human", rubric=rubric, case_ids=ids)
    add_labels(ws, "bob", bob, kind="human", rubric=rubric, case_ids=ids)
    return ws


def _expected_ppi(
    strata: list[str], y: np.ndarray, f: np.ndarray, labelled: np.ndarray, used: np.ndarray
) -> tuple[float, list[float]]:
    """The stratified PPI++ estimate worked from the case arrays: strata in design
    order, pooled as :func:`pool_strata` says."""
    order = sorted({s for s, u in zip(strata, used, strict=True) if u}, key=stratum_order)
    codes = np.array([order.index(s) if s in order else -1 for s in strata])
    counts = [int((labelled & (codes == h)).sum()) for h in range(len(order))]
    samples = []
    for pool in pool_strata(counts):
        inside = np.isin(codes, pool) & used
        lab, unl = inside & labelled, inside & ~labelled
        samples.append(StratumSample.of_values("p", y[lab], f[lab], f[unl]))
    est = stratified_ppi(samples)
    return min(max(est.value, 0.0), 1.0), [min(max(v, 0.0), 1.0) for v in est.ci]


def test_ppi_is_the_stratified_estimate_with_pooling_and_left_out_cases(
    calibrated_ws: Workspace, rubric: Rubric
) -> None:
    table = labels_from_workspace(calibrated_ws)
    report = compute_report(table, rubric, resamples=0)
    c = report.calibrated
    assert c.available
    assert c.design == DESIGN
    assert "random draw" in (c.assumption or "")
    g = c.overall
    assert g is not None
    s = g.labels
    # one case without a majority, one with an unresolved reference: counted, left out
    assert (s.no_majority, s.unresolved) == (1, 1)
    assert s.used == N_CASES - 2
    assert s.labelled == N_LABELLED - 2
    assert sum(x.cases for x in s.strata.values()) == s.used
    assert list(s.strata) == sorted(s.strata, key=stratum_order)
    # rank bucket 1-5 has three validation cases (0, 9, 26): one disputed, one split
    assert s.strata["1-5"].labelled == 1
    assert s.pooled == [["1-5", "6-20"]]

    strata = [meta.stratum or "" for meta in table.cases]
    names = rubric.label_names
    winner = report.majority.labels
    maj = np.array([_majority(calibrated_ws, cid, names) for cid in table.case_ids], dtype=object)
    ref = np.array([_reference(calibrated_ws, cid) for cid in table.case_ids], dtype=object)
    used = (maj != None) & (ref != "?")  # noqa: E711 (element-wise)
    labelled = used & (ref != None) & (ref != "?")  # noqa: E711
    for label in names:
        x = s.shares[label]
        y, f = ref == label, maj == label
        value, ci = _expected_ppi(strata, y, f, labelled, used)
        assert x.ppi.value == pytest.approx(value, abs=1e-12)
        assert x.ppi.ci == pytest.approx(ci, abs=1e-12)
        assert (x.ppi.n, x.ppi.n_unlabelled) == (N_LABELLED - 2, N_CASES - N_LABELLED)
        assert x.ppi.ci_unreliable  # 28 labelled cases
        assert x.panel.value == winner.shares[label]
        humans = ref[(ref != None) & (ref != "?")]  # noqa: E711
        assert x.humans.value == pytest.approx(np.mean(humans == label))
        assert x.humans.n == N_LABELLED - 1
        assert (x.effective_n or 0.0) > 0
        # Rogan-Gladen for the majority, from its counts against the reference
        decided, judged = maj != None, (maj != None) & (ref != None) & (ref != "?")  # noqa: E711
        pos, neg = judged & (ref == label), judged & (ref != label)
        rg = rogan_gladen(
            int((decided & f).sum()),
            int(decided.sum()),
            int((pos & f).sum()),
            int(pos.sum()),
            int((neg & ~f).sum()),
            int(neg.sum()),
        )
        assert x.rogan_gladen.majority.value == rg.value
        assert x.rogan_gladen.majority.ci == (list(rg.ci) if rg.ci else None)
        assert set(x.rogan_gladen.raters) == {f"judge-{j}" for j in range(5)}
    # every dataset, run and category has its own figures, and the binary collapse too
    assert set(c.by_run) == {"run-a"}
    assert g.binary is not None
    assert set(g.binary.shares) == set(report.binary_labels)


def _majority(ws: Workspace, case_id: str, names: list[str]) -> str | None:
    votes = [r.label for r in ws.latest_labels(case_ids=[case_id]) if r.rater.startswith("judge")]
    counts = {n: votes.count(n) for n in names}
    best = max(counts.values())
    return next(n for n, k in counts.items() if k == best) if 2 * best > len(votes) else None


def _reference(ws: Workspace, case_id: str) -> str | None:
    """The humans' consensus, ``?`` when they disagree, ``None`` without a human label."""
    labels = {r.label for r in ws.latest_labels(case_ids=[case_id]) if r.rater_kind == "human"}
    if not labels:
        return None
    return labels.pop() if len(labels) == 1 else "?"


def test_without_strata_the_estimate_is_plain_ppi(tmp_path: Path, rubric: Rubric) -> None:
    # a labels file without the stratum column: one stratum, PPI++ as ppi_py computes it
    rng = np.random.default_rng(5)
    names = rubric.label_names
    lines = ["case_id,rater,rater_kind,label"]
    truth = rng.choice(3, size=120, p=[0.4, 0.4, 0.2])
    y, f = [], []
    for i, t in enumerate(truth):
        judge = [t if rng.random() < 0.75 else (t + 1) % 3 for _ in range(3)]
        for j, lab in enumerate(judge):
            lines.append(f"c{i},j{j},judge,{names[lab]}")
        f.append(max(set(judge), key=judge.count) if len(set(judge)) < 3 else -1)
        if i < 40:
            lines.append(f"c{i},h,human,{names[t]}")
            y.append(t)
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = compute_report(labels_from_file(path, rubric), rubric, resamples=0)
    c = report.calibrated
    assert c.design == NO_DESIGN
    assert c.overall is not None
    fs = np.array(f)
    decided = fs >= 0
    lab_mask = decided[:40]
    for k, label in enumerate(names):
        yk = np.array(y)[lab_mask] == k
        est = ppi_mean(yk, fs[:40][lab_mask] == k, fs[40:][decided[40:]] == k)
        got = c.overall.labels.shares[label].ppi
        assert got.value == pytest.approx(min(max(est.value, 0.0), 1.0), abs=1e-12)
        assert got.ci == pytest.approx([min(max(v, 0.0), 1.0) for v in est.ci], abs=1e-12)


def test_no_reference_no_calibration_and_the_reason(
    workspace: Workspace, rubric: Rubric, tmp_path: Path
) -> None:
    add_labels(workspace, "judge-a", ["supports"] * 12, rubric=rubric)
    add_labels(workspace, "judge-b", ["supports"] * 12, rubric=rubric)
    report = compute_report(labels_from_workspace(workspace), rubric, resamples=0)
    assert not report.calibrated.available
    assert "no human labels" in (report.calibrated.reason or "")
    write_report(report, tmp_path / "out")
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Calibrated prevalence" in text
    assert "Not available: no human labels" in text


def test_the_section_in_every_file_and_the_export_keeps_the_strata(
    calibrated_ws: Workspace, rubric: Rubric, tmp_path: Path
) -> None:
    report = compute_report(labels_from_workspace(calibrated_ws), rubric, resamples=0)
    out = tmp_path / "out"
    write_report(report, out)
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    first = data["calibrated"]["overall"]["labels"]["shares"]["supports"]
    assert set(first) == {"panel", "humans", "ppi", "effective_n", "rogan_gladen"}
    assert set(first["rogan_gladen"]) == {"majority", "raters"}
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Calibrated prevalence" in md
    assert "all cases (labels): strata 1-5 + 6-20 pooled" in md
    assert "left out 1 case(s) with no decided majority and 1 with an unresolved reference" in md
    assert "Rogan-Gladen per rater" in md
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Share of supports (labels): panel, PPI and humans" in html
    shown = assert_renders(out / "report.html", tmp_path / "calibrated.png", min_figures=3)
    assert sum("panel, PPI and humans" in box.label for box in shown.svgs) == 2
    # every figure whose marks take series colours says what they mean in a legend
    for svg in re.findall(r"<svg .*?</svg>", html, flags=re.DOTALL):
        marks = re.sub(r'<g class="legend">.*?</g>', "", svg, flags=re.DOTALL)
        if any(f'"{colour}"' in marks for colour in PALETTE):
            assert '<g class="legend">' in svg, svg[:300]
    # a labels export carries each case's stratum: the report on it is the same
    labels = tmp_path / "labels.csv"
    export_labels(calibrated_ws, labels)
    from_file = compute_report(labels_from_file(labels, rubric), rubric, resamples=0)
    assert from_file.calibrated == report.calibrated


def test_a_case_given_two_strata_is_refused(tmp_path: Path, tiap_cli) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "labels.csv"
    path.write_text(
        "case_id,rater,label,stratum\nc1,a,supports,1-5\nc1,b,supports,6-20\n", encoding="utf-8"
    )
    done = tiap_cli("agreement", "report", "--labels", path, "--out", tmp_path / "out")
    assert done.code == 2
    assert "stratum" in done.err
    assert len(done.err.strip().splitlines()) == 1


def test_a_label_the_reference_never_gives_has_its_interval_marked(rubric: Rubric) -> None:
    # 40 labelled cases, 60 not; the reference gives supports or partial, never the
    # third label (which the judges give on 5 unlabelled cases)
    supports, partial, never = rubric.label_names
    cases = [CaseMeta(case_id=f"c{i}", stratum="1-5") for i in range(100)]
    raters = [RaterInfo(name=f"j{j}", kind="judge") for j in range(3)]
    raters.append(RaterInfo(name="h", kind="human"))
    labels = []
    for i in range(100):
        label = (supports, partial)[i % 2] if i < 95 else never
        labels += [LabelEntry(case_id=f"c{i}", rater=f"j{j}", label=label) for j in range(3)]
        if i < 40:
            labels.append(LabelEntry(case_id=f"c{i}", rater="h", label=label))
    table = LabelTable(cases=cases, raters=raters, labels=labels)
    shares = compute_report(table, rubric, resamples=0).calibrated.overall.labels.shares  # type: ignore[union-attr]
    assert shares[never].ppi.n == 40
    assert shares[never].ppi.ci_unreliable
    # the labels never vary with the majority there: the tuned weight is 0 and the
    # estimate is the labels' own share, 0 with a zero-width interval
    assert shares[never].ppi.ci == [0.0, 0.0]
    assert not shares[supports].ppi.ci_unreliable
    assert shares[supports].ppi.ci[1] > shares[supports].ppi.ci[0]  # type: ignore[index]
